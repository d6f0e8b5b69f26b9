import { Inject, Injectable } from '@nestjs/common';
import type { QueueRef, Store } from '@sluice/store';
import { MetricsService } from '../metrics/metrics.service';
import { STORE } from '../store/store.provider';
import { DEAD_LETTERS } from './delivery-limits';

/** Most queues one instance re-reads for sluice_dead_letters at each scrape. */
const MAX_TRACKED_QUEUES = 1000;

/**
 * Keeps sluice_dead_letters{namespace,queue} true: set from every operation that learns a depth,
 * and re-read from the store at each scrape for the queues this instance has seen, so a redrive
 * through another instance shows here too.
 */
@Injectable()
export class DeadLetterDepth {
  private readonly tracked = new Map<string, QueueRef>();

  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly metrics: MetricsService,
  ) {
    metrics.refreshDeadLetters = () => this.refresh();
  }

  observe(ref: QueueRef, depth: number): void {
    const id = `${ref.namespace}/${ref.queue}`;
    if (!this.tracked.has(id) && this.tracked.size < MAX_TRACKED_QUEUES) this.tracked.set(id, ref);
    this.metrics.deadLetters.set({ namespace: ref.namespace, queue: ref.queue }, depth);
  }

  /** Re-reads every tracked depth; a store that does not answer leaves the last value. */
  private async refresh(): Promise<void> {
    await Promise.all(
      [...this.tracked.values()].map(async (ref) => {
        try {
          this.observe(ref, await this.store.countDeadLetters(ref, DEAD_LETTERS));
        } catch {
          // The store is down: the scrape still answers, with the depth last seen.
        }
      }),
    );
  }
}
