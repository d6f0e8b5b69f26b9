import { ComposedStore } from '../compose';
import { SluiceKeys } from '../keys';
import type { Store } from '../store';
import { redisAudit } from './audit';
import { redisBreakers } from './breakers';
import { disconnectRedisClient, waitUntilClientReady, type RedisClient } from './connection';
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
      async waitUntilReady(timeoutMs) {
        await Promise.all([waitUntilClientReady(client, timeoutMs), replicas.waitUntilReady(timeoutMs)]);
      },
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
