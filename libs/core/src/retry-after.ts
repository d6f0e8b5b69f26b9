import type { RetryBudgetPolicy } from '@sluice/protocol';
import type { BreakerRecord } from './breaker';
import { retryFits } from './retry-budget';

/** One second of the budget window: the first attempts, the retries and the retries that succeeded counted in it. */
export interface BudgetSecond {
  second: number;
  requests: number;
  retries: number;
  retriesSucceeded: number;
}

/**
 * When an exhausted budget could grant the same ask again if nothing new were reported, ms from
 * `nowMs`: the first moment, as its oldest seconds leave the window (second `s` leaves at the start
 * of `s + windowSeconds`), at which retryFits holds again. Under an adaptive budget that moment is
 * not always the first departure: a second that leaves with more successes than retries raises the
 * net count, so each departure is tried in turn. A budget that only new requests could refill (no
 * floor) answers the whole window. Twin of includes/retry_after.lua.
 *
 * @example
 * // window 10 s, floor 1 retry/s: 10 retries counted at second 100 leave it at 110 s.
 * budgetRetryAfterMs(policy, [{ second: 100, requests: 0, retries: 10, retriesSucceeded: 0 }], 105_250); // 4750
 */
export function budgetRetryAfterMs(policy: RetryBudgetPolicy, seconds: readonly BudgetSecond[], nowMs: number): number {
  let requests = 0;
  let retries = 0;
  let retriesSucceeded = 0;
  for (const bucket of seconds) {
    requests += bucket.requests;
    retries += bucket.retries;
    retriesSucceeded += bucket.retriesSucceeded;
  }
  for (const bucket of seconds) {
    requests -= bucket.requests;
    retries -= bucket.retries;
    retriesSucceeded -= bucket.retriesSucceeded;
    if (retryFits(policy, retries, requests, retriesSucceeded)) {
      return Math.max((bucket.second + policy.windowSeconds) * 1000 - nowMs, 0);
    }
  }
  return policy.windowSeconds * 1000;
}

/**
 * When a breaker that blocks calls could let a retry through, ms from `nowMs`: its `openUntil`
 * (open, or a forced state with an end); null when no time is known (half-open, which only probe
 * reports close; forced open until reset). Twin of includes/retry_after.lua.
 */
export function breakerRetryAfterMs(record: Pick<BreakerRecord, 'openUntil'>, nowMs: number): number | null {
  return record.openUntil === null ? null : Math.max(record.openUntil - nowMs, 0);
}
