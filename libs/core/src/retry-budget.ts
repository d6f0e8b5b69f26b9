import type { RetryBudgetPolicy } from '@sluice/protocol';

/** Ratio and minRetriesPerSecond count in millionths; requests split at a million (see retryBudgetLimit). */
const SCALE = 1_000_000;

/**
 * The most retries the window may hold: `floor(ratio × requests + minRetriesPerSecond × windowSeconds)`,
 * in integers: the ratio and the floor rate in millionths, the requests split at a million, so no
 * product passes 2^53 and floor() never meets a binary fraction (0.29 × 100 is 28.999999999999996).
 * The Lua twin is libs/store/src/redis/lua/includes/budget.lua; the conformance suite keeps them equal.
 */
export function retryBudgetLimit(policy: RetryBudgetPolicy, requests: number): number {
  const perMillion = Math.round(policy.ratio * SCALE);
  const floorMillionths = Math.round(policy.minRetriesPerSecond * SCALE) * policy.windowSeconds;
  const millions = Math.floor(requests / SCALE);
  const rest = requests - millions * SCALE;
  return perMillion * millions + Math.floor((perMillion * rest + floorMillionths) / SCALE);
}

/** True when one more retry fits: `retries + 1 ≤ limit`. */
export function retryFits(policy: RetryBudgetPolicy, retries: number, requests: number): boolean {
  return retries + 1 <= retryBudgetLimit(policy, requests);
}
