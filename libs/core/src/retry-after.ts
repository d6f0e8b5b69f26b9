import type { RetryBudgetPolicy } from '@sluice/protocol';
import type { BreakerRecord } from './breaker';
import { retryBudgetLimit } from './retry-budget';

/** One second of the budget window: the first attempts and the retries counted in it. */
export interface BudgetSecond {
  second: number;
  requests: number;
  retries: number;
}

/**
 * When an exhausted budget could grant the same ask again if no new requests were reported, ms
 * from `nowMs`: the first moment, as its oldest seconds leave the window (second `s` leaves at the
 * start of `s + windowSeconds`), at which `retries + 1 ≤ limit` holds again. A budget that only new
 * requests could refill (no floor) answers the whole window. Twin of includes/retry_after.lua.
 *
 * @example
 * // window 10 s, floor 1 retry/s: 10 retries counted at second 100 leave it at 110 s.
 * budgetRetryAfterMs(policy, [{ second: 100, requests: 0, retries: 10 }], 105_250); // 4750
 */
export function budgetRetryAfterMs(policy: RetryBudgetPolicy, seconds: readonly BudgetSecond[], nowMs: number): number {
  let requests = 0;
  let retries = 0;
  for (const bucket of seconds) {
    requests += bucket.requests;
    retries += bucket.retries;
  }
  for (const bucket of seconds) {
    requests -= bucket.requests;
    retries -= bucket.retries;
    if (retries + 1 <= retryBudgetLimit(policy, requests)) {
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
