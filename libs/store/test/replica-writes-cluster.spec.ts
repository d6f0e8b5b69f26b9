import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { RedisClusterProcess } from '../../../test/support/redis-cluster';
import { createRedisClient } from '../src/redis/connection';
import { RedisStore } from '../src/redis/redis-store';
import { SluiceKeys } from '../src/keys';

// The connection that waits for replicas is a second Cluster client: a store that says it is
// ready must have it ready too, with every master open, or its first completions fail as 503s.

const ROUNDS = 20;
const TIMEOUT_MS = 100;
const keys = new SluiceKeys();
const response = JSON.stringify({ status: 200, headers: {}, body: '{"id":1}', bodyEncoding: 'utf8' });

describe('idempotency completions that wait for a replica, on a Redis Cluster with replicas', () => {
  let cluster: RedisClusterProcess;

  beforeAll(async () => {
    cluster = await RedisClusterProcess.start({
      replicasPerMaster: 1,
      config: { 'repl-diskless-sync-delay': '0' },
      startTimeoutMs: 30_000,
    });
  }, 60_000);

  afterAll(async () => {
    await cluster?.cleanup();
  });

  it('are acknowledged on every master as soon as a fresh store is ready', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const client = createRedisClient({ clusterNodes: cluster.nodes, commandTimeoutMs: TIMEOUT_MS });
      const store = new RedisStore({ client, timeoutMs: TIMEOUT_MS, durability: 'replica' });
      try {
        await store.waitUntilReady(10_000);
        for (const ref of oneKeyPerMaster(client as Cluster, round)) {
          await store.claimIdempotencyKey(ref, { fingerprint: 'f', leaseMs: 60_000, retentionMs: 60_000, token: 't' });
          const outcome = await store
            .completeIdempotencyKey(ref, { token: 't', response })
            .catch((error: Error) => error.message);
          outcomes.push(`${ref.key}: ${outcome}`);
        }
      } finally {
        await store.close();
      }
    }
    expect(outcomes.filter((outcome) => !outcome.endsWith(': replicated'))).toEqual([]);
    expect(outcomes).toHaveLength(ROUNDS * 3);
  }, 120_000);
});

/** One idempotency key on each master's slots. */
function oneKeyPerMaster(client: Cluster, round: number): Array<{ namespace: string; key: string }> {
  const byOwner = new Map<string, { namespace: string; key: string }>();
  for (let i = 0; byOwner.size < 3; i++) {
    const ref = { namespace: 'shop', key: `order-${round}-${i}` };
    const owner = client.slots[calculateSlot(keys.idempotency(ref.namespace, ref.key).record)][0];
    if (!byOwner.has(owner)) byOwner.set(owner, ref);
  }
  return [...byOwner.values()];
}
