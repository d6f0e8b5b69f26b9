import { RedisStore, SluiceKeys, createRedisClient, createRedisSubscriber, type RedisConnectionOptions } from '../src';
import { deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { sleep } from '../../../test/support/time';
import type { StoresUnderTest } from './concurrency-conformance';
import type { StoreUnderTest } from './store-conformance';

/** A RedisStore on its own connection and key prefix; its clock is Redis's, so time passes for real. */
export async function redisStoreUnderTest(
  connection: Omit<RedisConnectionOptions, 'commandTimeoutMs'>,
  label: string,
): Promise<StoreUnderTest> {
  const prefix = uniquePrefix(label);
  const client = createRedisClient({ ...connection, commandTimeoutMs: 2000 });
  const subscriber = createRedisSubscriber({ ...connection, commandTimeoutMs: 2000 });
  const keys = new SluiceKeys(prefix);
  const store = new RedisStore({ client, subscriber, keys, timeoutMs: 2000 });
  await store.waitUntilReady(5000);
  return {
    store,
    pass: sleep,
    redis: { keys, pttl: (key) => client.pttl(key) },
    cleanup: async () => {
      await deleteKeysWithPrefix(client, prefix);
      await store.close();
    },
  };
}

/** `count` RedisStores, each on connections of its own, sharing one key prefix (as a fleet's instances do). */
export async function redisStoresUnderTest(
  connection: Omit<RedisConnectionOptions, 'commandTimeoutMs'>,
  label: string,
  count: number,
): Promise<StoresUnderTest> {
  const prefix = uniquePrefix(label);
  const keys = new SluiceKeys(prefix);
  const clients = Array.from({ length: count }, () => createRedisClient({ ...connection, commandTimeoutMs: 2000 }));
  const stores = clients.map((client) => new RedisStore({ client, keys, timeoutMs: 2000 }));
  await Promise.all(stores.map((store) => store.waitUntilReady(5000)));
  return {
    stores,
    pass: sleep,
    cleanup: async () => {
      await deleteKeysWithPrefix(clients[0], prefix);
      await Promise.all(stores.map((store) => store.close()));
    },
  };
}
