import type { BreakerSnapshot } from '@sluice/core';
import type { DependencyRef } from './common';

/** One shard's epoch: the marker that lives as long as the shard's data. */
export interface StoreShardEpoch {
  /** Which shard (the marker's hash tag): one on a standalone Redis, one per master on a Cluster. */
  shard: string;
  epoch: string;
  /** True when the shard had no marker and this call set `epoch`: its data is new, or was lost. */
  created: boolean;
}

/** An operator's forced state as an instance remembers it, to be asserted again after a store reset. */
export interface ForcedBreakerState {
  state: 'forced_open' | 'forced_closed';
  /** When the operator forced it (epoch ms, the store's clock). */
  since: number;
  /** When it lapses (epoch ms); null: until reset. */
  openUntil: number | null;
  reason: string;
}

export interface ReassertedBreaker {
  /** False when nothing changed: it lapsed, or the store holds it already, or a later trip, reset or lapse. */
  applied: boolean;
  snapshot: BreakerSnapshot;
}

/** What lets state outlive a store that lost its data: each shard's epoch, and re-asserting forced states. */
export interface ResetStore {
  /**
   * Every shard's epoch marker, setting `candidate` where a shard has none. Shards that cannot be
   * reached now are left out (they are asked again next time).
   */
  readStoreEpochs(candidate: string): Promise<StoreShardEpoch[]>;

  /**
   * Forces the breaker to `forced` again, with its own `since`, `openUntil` and reason, unless that
   * changes nothing true: the state has lapsed, the store already holds it (or a later forced
   * state), or the breaker was reset or lapsed after `since`. Idempotent across instances.
   */
  reassertBreaker(ref: DependencyRef, forced: ForcedBreakerState): Promise<ReassertedBreaker>;
}
