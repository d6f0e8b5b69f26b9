import type { RetryBudgetPolicy } from '@sluice/protocol';

/** Guards floor() against binary fractions: 0.29 * 100 is 28.999999999999996. */
const EPSILON = 1e-9;

/**
 * The most retries the window may hold: `floor(ratio × requests + minRetriesPerSecond × windowSeconds)`.
 * The Lua twin is in libs/store/src/redis/lua/decide_retry-4.lua; the conformance suite keeps them equal.
 */
export function retryBudgetLimit(policy: RetryBudgetPolicy, requests: number): number {
  return Math.floor(policy.ratio * requests + policy.minRetriesPerSecond * policy.windowSeconds + EPSILON);
}

/** True when one more retry fits: `retries + 1 ≤ limit`. */
export function retryFits(policy: RetryBudgetPolicy, retries: number, requests: number): boolean {
  return retries + 1 <= retryBudgetLimit(policy, requests);
}
