import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { ReporterOfBatch } from '@sluice/core';
import type { DependencyRef, OutcomeBatch, OutcomePolicy, RecordedOutcomes, Store } from '@sluice/store';
import { STORE } from '../store/store.provider';

/**
 * How long this instance gathers the reports it receives for one dependency before it writes them
 * in one script call. Within the API's bound (100 ms) and short against the SDK's flush interval.
 */
export const REPORT_MERGE_WINDOW_MS = 20;

interface Pending {
  ref: DependencyRef;
  policy: OutcomePolicy;
  batch: OutcomeBatch;
  /** The merged batch's reporters, by name. */
  reporters: Map<string, ReporterOfBatch>;
  waiters: Array<{ resolve: (recorded: RecordedOutcomes) => void; reject: (error: unknown) => void }>;
  timer?: NodeJS.Timeout;
}

/**
 * Merges the reports this instance receives for one dependency within REPORT_MERGE_WINDOW_MS into
 * one record_outcomes call, so a popular dependency's slot takes about one call per instance per
 * window instead of one per reporting pod: counts and latency are summed, every reporter is
 * counted (failing when its own report had failed or slow calls), and each report is answered with
 * the merged call's breaker and reporter count. A report with probe outcomes is written at once
 * (with what was gathered so far): a half-open breaker's fate does not wait. A report is answered
 * only once its call has returned, so a crash loses only reports no caller had an answer for.
 */
@Injectable()
export class ReportMerger implements OnModuleDestroy {
  private readonly pending = new Map<string, Pending>();

  constructor(@Inject(STORE) private readonly store: Store) {}

  record(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes> {
    const key = `${ref.namespace}/${ref.dependency}`;
    return new Promise((resolve, reject) => {
      let pending = this.pending.get(key);
      if (pending) mergeInto(pending, batch);
      else {
        const first: ReporterOfBatch = { reporter: batch.reporter, failing: batch.failures + batch.slow > 0 };
        pending = {
          ref,
          policy,
          batch: asMerged(batch, first),
          reporters: new Map([[first.reporter, first]]),
          waiters: [],
        };
        this.pending.set(key, pending);
      }
      pending.policy = policy; // the latest read of the policy
      pending.waiters.push({ resolve, reject });
      if (batch.probes.length > 0) this.flush(key);
      else pending.timer ??= setTimeout(() => this.flush(key), REPORT_MERGE_WINDOW_MS);
    });
  }

  private flush(key: string): void {
    const pending = this.pending.get(key);
    if (!pending) return;
    this.pending.delete(key);
    clearTimeout(pending.timer);
    this.store.recordOutcomes(pending.ref, pending.batch, pending.policy).then(
      (recorded) => pending.waiters.forEach((waiter) => waiter.resolve(recorded)),
      (error: unknown) => pending.waiters.forEach((waiter) => waiter.reject(error)),
    );
  }

  /** Writes what is gathered before the store closes. */
  onModuleDestroy(): void {
    for (const key of [...this.pending.keys()]) this.flush(key);
  }
}

/** A copy of the first report of a merge, its reporter listed. */
function asMerged(batch: OutcomeBatch, first: ReporterOfBatch): OutcomeBatch {
  return { ...batch, probes: [...batch.probes], latency: batch.latency && [...batch.latency], reporters: [first] };
}

function mergeInto(pending: Pending, batch: OutcomeBatch): void {
  const merged = pending.batch;
  merged.requests += batch.requests;
  merged.successes += batch.successes;
  merged.failures += batch.failures;
  merged.slow += batch.slow;
  merged.retries = (merged.retries ?? 0) + (batch.retries ?? 0);
  merged.probes.push(...batch.probes);
  if (batch.latency) {
    const into = (merged.latency ??= batch.latency.map(() => 0));
    batch.latency.forEach((count, i) => (into[i] = (into[i] ?? 0) + count));
  }
  const failing = batch.failures + batch.slow > 0;
  const known = pending.reporters.get(batch.reporter);
  if (known) known.failing ||= failing;
  else {
    const entry = { reporter: batch.reporter, failing };
    pending.reporters.set(entry.reporter, entry);
    merged.reporters?.push(entry);
  }
}
