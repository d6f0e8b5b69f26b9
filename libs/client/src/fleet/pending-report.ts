import { LATENCY_BOUNDS_MS } from '@sluice/core';
import type { DependencyReport, ProbeOutcome } from '@sluice/protocol';

/** The coordinator's own latency bounds (libs/core): its fleet histogram adds these counts up as they are. */
const REPORTED_BOUNDS_MS = [...LATENCY_BOUNDS_MS];

/** The bucket of a latency among REPORTED_BOUNDS_MS (libs/core's `fixedBucketOf`, as a plain loop: it runs per attempt). */
function bucketOf(ms: number): number {
  let bucket = 0;
  while (bucket < REPORTED_BOUNDS_MS.length && ms > REPORTED_BOUNDS_MS[bucket]) bucket++;
  return bucket;
}

/** Hands the local guard first attempts and plain successes, as one batch. */
export type LocalFeed = (now: number, requests: number, successes: number) => void;

/**
 * One dependency's counts waiting for the next report to the coordinator, and the batches of them
 * the local fallback guard is fed.
 */
export class PendingReport {
  requests = 0;
  successes = 0;
  failures = 0;
  slow = 0;
  /** Retries made on this process's own grant (its fallback decided): the fleet's budget is charged. */
  ownRetries = 0;
  /** Granted retries (by the fleet or the fallback) whose attempt answered: an adaptive budget gives them back. */
  retriesSucceeded = 0;
  samples = 0;
  counts = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  probes: ProbeOutcome[] = [];
  /** When the oldest unreported count was taken. */
  pendingSince = 0;
  /** How much of `requests` and `successes` the local guard has been handed (see {@link feedLocal}). */
  private localFedRequests = 0;
  private localFedSuccesses = 0;

  constructor(
    private readonly name: string,
    private readonly feed: LocalFeed,
  ) {}

  /** A first attempt went out. */
  recordRequest(now: number): void {
    this.touch(now);
    this.requests++;
  }

  /** A retry went out on this process's own grant, not the coordinator's. */
  recordOwnRetry(now: number): void {
    this.touch(now);
    this.ownRetries++;
  }

  /** A retry granted by the fleet or the fallback answered. */
  recordRetrySucceeded(now: number): void {
    this.touch(now);
    this.retriesSucceeded++;
  }

  /** A probe's outcome, for the coordinator to settle its lease. */
  recordProbe(now: number, probe: ProbeOutcome): void {
    this.touch(now);
    this.probes.push(probe);
  }

  /**
   * An attempt ended. A plain success is only counted (the local guard gets it in the next batch);
   * true for a failed or slow outcome, which the local guard must weigh at once (it may open its
   * breaker): this counts it as handed over.
   */
  recordOutcome(now: number, latencyMs: number, failed: boolean, slow: boolean): boolean {
    this.touch(now);
    this.counts[bucketOf(latencyMs)]++;
    this.samples++;
    if (!failed && !slow) {
      this.successes++;
      return false;
    }
    if (failed) this.failures++;
    else {
      this.successes++;
      this.localFedSuccesses++;
    }
    if (slow) this.slow++;
    return true;
  }

  /**
   * Hands the local guard the first attempts and plain successes counted since it was last fed, as
   * one batch: at every report, and before the guard weighs a failure or decides a retry. Counting
   * them one by one on both sides was a measurable part of a call's cost.
   */
  feedLocal(now: number): void {
    const requests = this.requests - this.localFedRequests;
    const successes = this.successes - this.localFedSuccesses;
    if (requests === 0 && successes === 0) return;
    this.localFedRequests = this.requests;
    this.localFedSuccesses = this.successes;
    this.feed(now, requests, successes);
  }

  get hasPending(): boolean {
    return this.pendingSince !== 0;
  }

  /** Takes the pending counts as one report entry at `now` and starts afresh (the local guard keeps them). */
  take(now: number): DependencyReport {
    this.feedLocal(now);
    const report: DependencyReport = {
      dep: this.name,
      requests: this.requests,
      successes: this.successes,
      failures: this.failures,
      slow: this.slow,
    };
    if (this.ownRetries > 0) report.retries = this.ownRetries;
    if (this.retriesSucceeded > 0) report.retriesSucceeded = this.retriesSucceeded;
    if (this.samples > 0) report.latency = { boundsMs: REPORTED_BOUNDS_MS, counts: this.counts };
    if (this.probes.length > 0) report.probes = this.probes;
    this.requests = this.successes = this.failures = this.slow = this.samples = this.ownRetries = 0;
    this.retriesSucceeded = 0;
    this.localFedRequests = this.localFedSuccesses = 0;
    this.counts = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    this.probes = [];
    this.pendingSince = 0;
    return report;
  }

  /** Puts back a report that could not be delivered (its probes are dropped: their leases expire). */
  restore(report: DependencyReport, takenAt: number): void {
    this.requests += report.requests;
    this.successes += report.successes;
    // The local guard already has these.
    this.localFedRequests += report.requests;
    this.localFedSuccesses += report.successes;
    this.failures += report.failures;
    this.slow += report.slow;
    this.ownRetries += report.retries ?? 0;
    this.retriesSucceeded += report.retriesSucceeded ?? 0;
    if (report.latency) {
      report.latency.counts.forEach((count, slot) => (this.counts[slot] += count));
      this.samples += report.latency.counts.reduce((sum, count) => sum + count, 0);
    }
    if (this.pendingSince === 0 || takenAt < this.pendingSince) this.pendingSince = takenAt;
  }

  private touch(now: number): void {
    if (this.pendingSince === 0) this.pendingSince = now;
  }
}
