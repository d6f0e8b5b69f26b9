import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { Store, StoreShardEpoch } from '@sluice/store';
import { MetricsService } from '../metrics/metrics.service';
import type { RemembersNamespaces } from './namespace-cap';
import { STORE } from './store.provider';

/** How often every shard's epoch is read: a reset is seen within this of the store answering again. */
export const RESET_CHECK_MS = 250;

/** Told once per store reset seen; what it rebuilds is its own to retry. */
export type ResetListener = (shards: string[]) => Promise<void> | void;

/**
 * Watches for a store that lost its data: each shard of the store (the server, or each Cluster
 * master) holds an epoch marker without expiry, read every RESET_CHECK_MS. A marker that is gone
 * (a restart without persistence, a flush, an empty node in its place) is set anew by the first
 * instance to read it, so every instance sees its shard's epoch change, however many there are.
 * Then it logs an error, counts `sluice_store_resets_total`, has the namespaces and dependencies
 * registered again at their next use, and tells its listeners (the policies file is seeded again,
 * forced breaker states asserted again), without a restart.
 */
@Injectable()
export class ResetWatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Store');
  private readonly epochs = new Map<string, string>();
  private readonly listeners: ResetListener[] = [];
  private timer?: NodeJS.Timeout;
  private checking = false;

  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly metrics: MetricsService,
  ) {}

  onReset(listener: ResetListener): void {
    this.listeners.push(listener);
  }

  onApplicationBootstrap(): void {
    // The embedded store lives and dies with the process: nothing to watch.
    if (this.store.kind !== 'redis') return;
    this.timer = setInterval(() => void this.check(), RESET_CHECK_MS);
    this.timer.unref();
    void this.check();
  }

  beforeApplicationShutdown(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads every shard's epoch once; resolves the shards found reset (none the first time a shard is seen). */
  async check(): Promise<string[]> {
    if (this.checking) return [];
    this.checking = true;
    try {
      const epochs = await this.store.readStoreEpochs(randomUUID()).catch(() => [] as StoreShardEpoch[]);
      const reset = epochs.filter((shard) => this.changed(shard));
      if (reset.length > 0) this.announce(reset);
      return reset.map((shard) => shard.shard);
    } finally {
      this.checking = false;
    }
  }

  private changed({ shard, epoch, created }: StoreShardEpoch): boolean {
    const known = this.epochs.get(shard);
    this.epochs.set(shard, epoch);
    if (known === undefined && created) this.logger.log(`store shard ${shard}: new epoch ${epoch}`);
    return known !== undefined && known !== epoch;
  }

  /** Logs and counts the reset, and tells the listeners (in the background: they retry on their own). */
  private announce(reset: StoreShardEpoch[]): void {
    const shards = reset.map((shard) => shard.shard);
    this.metrics.storeResets.inc(reset.length);
    // The namespaces it registered are gone with the rest: each is registered again at its next use.
    (this.store as Partial<RemembersNamespaces>).forgetNamespaces?.();
    this.logger.error(
      `the store was reset: shard(s) ${shards.join(', ')} came back without their data (new epoch ` +
        `${reset.map((shard) => shard.epoch).join(', ')}); budgets, breakers, leases, idempotency records and ` +
        'dead letters held there are gone. Seeding the policies file and asserting known forced breaker states again.',
    );
    for (const listener of this.listeners) {
      Promise.resolve()
        .then(() => listener(shards))
        .catch((error: Error) => this.logger.warn(`after the store reset: ${error.message}`));
    }
  }
}
