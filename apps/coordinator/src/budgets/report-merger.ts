import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { ReporterOfBatch } from '@sluice/core';
import type { DependencyRef, OutcomeBatch, OutcomePolicy, RecordedOutcomes, Store } from '@sluice/store';
import { STORE } from '../store/store.provider';

/**
 * The shortest time between two record_outcomes calls this instance makes for one dependency (the
 * API's bound on how long a report may wait), so a dependency's slot takes at most 1000 / 100 = 10
 * calls a second from each instance, however many pods report.
 */
export const REPORT_MERGE_INTERVAL_MS = 100;

interface Waiter {
  resolve: (recorded: RecordedOutcomes) => void;
  reject: (error: unknown) => void;
}

/** What is gathered for one dependency until its next call. */
interface Gathered {
  ref: DependencyRef;
  policy: OutcomePolicy;
  batch: OutcomeBatch;
  /** The merged batch's reporters, by name. */
  reporters: Map<string, ReporterOfBatch>;
  waiters: Waiter[];
}

/** One dependency's state: what waits for its next call, and the timer of that call or of the interval after the last. */
interface Slot {
  gathered: Gathered | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Merges the reports this instance receives for one dependency into one record_outcomes call per
 * REPORT_MERGE_INTERVAL_MS at most, so a popular dependency's slot takes a bounded number of calls
 * per instance instead of one per reporting pod: counts and latency are summed, every reporter is
 * counted (failing when its own report had failed or slow calls), and each report is answered with
 * the merged call's breaker and reporter count. The first report after a quiet interval is written
 * at once (with those that came in the same turn of the event loop): an outage's first failures
 * reach the breaker without delay; the reports that come within the interval after a call wait for
 * its end, and are written together then. A report with probe outcomes is written at once (with
 * what was gathered so far): a half-open breaker's fate does not wait. A report is answered only
 * once its call has returned, so a crash loses only reports no caller had an answer for.
 */
@Injectable()
export class ReportMerger implements OnModuleDestroy {
  private readonly slots = new Map<string, Slot>();

  constructor(@Inject(STORE) private readonly store: Store) {}

  record(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes> {
    const key = `${ref.namespace}/${ref.dependency}`;
    return new Promise((resolve, reject) => {
      let slot = this.slots.get(key);
      if (!slot) {
        slot = { gathered: undefined, timer: undefined };
        this.slots.set(key, slot);
        // Quiet for a whole interval: written once this turn's reports have joined it.
        slot.timer = setTimeout(() => this.intervalEnded(key), 0);
      }
      const gathered = gather(slot, ref, batch, policy);
      gathered.waiters.push({ resolve, reject });
      if (batch.probes.length > 0) {
        slot.gathered = undefined;
        this.write(gathered);
      }
    });
  }

  /**
   * The interval after the slot's last call ended (or its first report's turn did): what was
   * gathered is written and a new interval starts; after a quiet one the slot is dropped.
   */
  private intervalEnded(key: string): void {
    const slot = this.slots.get(key);
    if (!slot) return;
    const { gathered } = slot;
    if (!gathered) {
      this.slots.delete(key);
      return;
    }
    slot.gathered = undefined;
    this.write(gathered);
    slot.timer = setTimeout(() => this.intervalEnded(key), REPORT_MERGE_INTERVAL_MS);
  }

  private write({ ref, batch, policy, waiters }: Gathered): void {
    this.store.recordOutcomes(ref, batch, policy).then(
      (recorded) => waiters.forEach((waiter) => waiter.resolve(recorded)),
      (error: unknown) => waiters.forEach((waiter) => waiter.reject(error)),
    );
  }

  /** Writes what is gathered before the store closes. */
  onModuleDestroy(): void {
    for (const slot of this.slots.values()) {
      clearTimeout(slot.timer);
      if (slot.gathered) this.write(slot.gathered);
    }
    this.slots.clear();
  }
}

/**
 * The slot's gathered batch with `batch` merged in (the first report of a merge is copied, its
 * reporter listed), under the latest read of the policy.
 */
function gather(slot: Slot, ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Gathered {
  if (slot.gathered) {
    mergeInto(slot.gathered, batch);
    slot.gathered.policy = policy;
    return slot.gathered;
  }
  const first: ReporterOfBatch = { reporter: batch.reporter, failing: batch.failures + batch.slow > 0 };
  slot.gathered = {
    ref,
    policy,
    batch: { ...batch, probes: [...batch.probes], latency: batch.latency && [...batch.latency], reporters: [first] },
    reporters: new Map([[first.reporter, first]]),
    waiters: [],
  };
  return slot.gathered;
}

function mergeInto(gathered: Gathered, batch: OutcomeBatch): void {
  const merged = gathered.batch;
  merged.requests += batch.requests;
  merged.successes += batch.successes;
  merged.failures += batch.failures;
  merged.slow += batch.slow;
  merged.retries = (merged.retries ?? 0) + (batch.retries ?? 0);
  merged.retriesSucceeded = (merged.retriesSucceeded ?? 0) + (batch.retriesSucceeded ?? 0);
  merged.probes.push(...batch.probes);
  if (batch.latency) {
    const into = (merged.latency ??= batch.latency.map(() => 0));
    batch.latency.forEach((count, i) => (into[i] = (into[i] ?? 0) + count));
  }
  const failing = batch.failures + batch.slow > 0;
  const known = gathered.reporters.get(batch.reporter);
  if (known) known.failing ||= failing;
  else {
    const entry = { reporter: batch.reporter, failing };
    gathered.reporters.set(entry.reporter, entry);
    merged.reporters?.push(entry);
  }
}
