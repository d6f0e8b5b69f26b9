import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { STORE_EPOCH_TAG, type SluiceKeys } from '../keys';
import type { ResetStore } from '../roles/resets';
import { breakerFromReply } from './breakers';
import type { RedisClient } from './connection';
import type { ScriptRunner } from './script-runner';

/** Past this many candidate tags, a master owning almost no slots goes without a marker. */
const MAX_TAG_SEARCH = 100_000;

/**
 * The shards whose epochs are watched: '0' on a standalone Redis; on a Cluster, for each master in
 * the client's slot map, the first shard number whose marker's slot that master owns.
 */
export function epochShards(client: RedisClient): string[] {
  if (!(client instanceof Cluster)) return ['0'];
  const masters = new Set(client.slots.map((nodes) => nodes?.[0]).filter((node) => node !== undefined));
  const shards: string[] = [];
  for (let shard = 0; masters.size > 0 && shard < MAX_TAG_SEARCH; shard++) {
    const owner = client.slots[calculateSlot(`${STORE_EPOCH_TAG}${shard}`)]?.[0];
    if (owner !== undefined && masters.delete(owner)) shards.push(String(shard));
  }
  return shards;
}

/** Each shard's epoch marker (read_store_epoch-1.lua) and re-asserted forced states (reassert_breaker-4.lua). */
export function redisResets(scripts: ScriptRunner, keys: SluiceKeys, client: RedisClient): ResetStore {
  return {
    async readStoreEpochs(candidate) {
      const shards = epochShards(client);
      const replies = await Promise.allSettled(
        shards.map((shard) => scripts.run('read_store_epoch', keys.storeEpoch(shard), candidate)),
      );
      return replies.flatMap((reply, i) =>
        reply.status === 'fulfilled'
          ? [{ shard: shards[i], epoch: reply.value[0], created: reply.value[1] === 1 }]
          : [],
      );
    },

    async reassertBreaker(ref, forced) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const reply = await scripts.run(
        'reassert_breaker',
        dependency.breaker,
        dependency.outcomes,
        dependency.reporters,
        dependency.probes,
        forced.state,
        forced.since,
        forced.openUntil ?? -1,
        forced.reason,
        dependency.events,
        ref.dependency,
      );
      return { applied: reply[0] === 1, snapshot: breakerFromReply(reply, 1) };
    },
  };
}
