import { Cluster } from 'ioredis';
import { ComposedStore } from '../compose';
import { StoreUnavailableError } from '../errors';
import { SluiceKeys } from '../keys';
import type { Store } from '../store';
import { redisAudit } from './audit';
import { redisBreakers } from './breakers';
import { disconnectRedisClient, type RedisClient } from './connection';
import { redisDecisions } from './decisions';
import { redisDeliveries } from './deliveries';
import { RedisEventSubscriber } from './event-subscriber';
import { redisEvents } from './events';
import { redisHistory } from './history';
import { redisIdempotency } from './idempotency';
import { redisLimits } from './limits';
import { redisPolicies } from './policies';
import { redisRegistry } from './registry';
import { redisRetryBatches } from './retry-batches';
import { ReplicaWrites, type Durability } from './replica-writes';
import { ScriptRunner } from './script-runner';
import { redisResets } from './store-epoch';

export interface RedisStoreOptions {
  client: RedisClient;
  /** A connection for sharded pub/sub; without one, subscribing fails. */
  subscriber?: RedisClient;
  keys?: SluiceKeys;
  /** Most time one operation may take before it fails as StoreUnavailableError. */
  timeoutMs: number;
  /** Which idempotency completions wait for a replica (replica-writes.ts); default `auto`. */
  durability?: Durability;
}

/**
 * The Store on Redis (standalone or Cluster): each method is one Lua script call, made by one part
 * per domain through the ScriptRunner (the reply deadline of the connection the first key uses).
 */
export class RedisStore extends ComposedStore implements Store {
  readonly kind = 'redis';
  readonly client: RedisClient;

  constructor(options: RedisStoreOptions) {
    const { client } = options;
    const keys = options.keys ?? new SluiceKeys();
    const scripts = new ScriptRunner(client, options.timeoutMs);
    const events = options.subscriber ? new RedisEventSubscriber(options.subscriber) : undefined;
    const replicas = new ReplicaWrites(client, options.durability ?? 'auto', options.timeoutMs);
    super({
      ...redisDecisions(scripts, keys),
      ...redisRetryBatches(scripts, keys),
      ...redisLimits(scripts, keys),
      ...redisBreakers(scripts, keys),
      ...redisHistory(scripts, keys),
      ...redisRegistry(scripts, keys),
      ...redisPolicies(scripts, keys),
      ...redisAudit(scripts, keys),
      ...redisEvents(keys, events),
      ...redisIdempotency(scripts, keys, replicas),
      ...redisDeliveries(scripts, keys),
      ...redisResets(scripts, keys, client),
      async ping() {
        await scripts.guard(client.ping());
      },
      waitUntilReady: (timeoutMs) => waitUntilReady(client, timeoutMs),
      async close() {
        events?.close();
        scripts.close();
        replicas.close();
        disconnectRedisClient(client);
      },
    });
    this.client = client;
  }
}

/**
 * Resolves once the client is ready (on a Cluster, with a ready connection to every master, so no
 * call meets one still opening); rejects with StoreUnavailableError after `timeoutMs`.
 */
async function waitUntilReady(client: RedisClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await clientReady(client, timeoutMs);
  if (!(client instanceof Cluster)) return;
  while (!client.nodes('master').every((node) => node.status === 'ready')) {
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError(`Redis Cluster masters were not all ready within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function clientReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new StoreUnavailableError(`Redis was not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('ready', onReady);
  });
}
