import { DEFAULT_DEPENDENCY_POLICY, type BudgetView, type RetryBudgetPolicy } from '@sluice/protocol';

/** Ratio and minRetriesPerSecond count in millionths; requests split at a million (see retryBudgetLimit). */
const SCALE = 1_000_000;

/** An adaptive budget's maxRatio when its policy has none. */
const DEFAULT_MAX_RATIO = DEFAULT_DEPENDENCY_POLICY.retryBudget.maxRatio ?? 0.5;

/**
 * The most retries the window may hold: `floor(ratio × requests + minRetriesPerSecond × windowSeconds)`,
 * in integers: the ratio and the floor rate in millionths, the requests split at a million, so no
 * product passes 2^53 and floor() never meets a binary fraction (0.29 × 100 is 28.999999999999996).
 * The Lua twin is libs/store/src/redis/lua/includes/budget.lua; the conformance suite keeps them equal.
 */
export function retryBudgetLimit(policy: RetryBudgetPolicy, requests: number): number {
  return windowAllowance(policy.ratio, policy, requests);
}

/**
 * The most retries the window holds however many succeed: under an adaptive budget
 * `floor(maxRatio × requests + minRetriesPerSecond × windowSeconds)` (maxRatio never below ratio),
 * in the integers of retryBudgetLimit; under a fixed one, the limit.
 */
export function retryBudgetCap(policy: RetryBudgetPolicy, requests: number): number {
  if (policy.mode === 'fixed') return retryBudgetLimit(policy, requests);
  return windowAllowance(Math.max(policy.maxRatio ?? DEFAULT_MAX_RATIO, policy.ratio), policy, requests);
}

/**
 * True when one more retry fits. Fixed: `retries + 1 ≤ limit`. Adaptive: each retry that succeeded
 * gives its grant back, so `max(retries − retriesSucceeded, 0) + 1 ≤ limit`, and `retries + 1 ≤ cap`
 * bounds what the dependency receives however many succeed. With no successes the two agree.
 *
 * @example
 * // ratio 0.1, maxRatio 0.5, no floor, 100 requests: limit 10, cap 50.
 * retryFits(policy, 10, 100); // false: 10 retries, none succeeded
 * retryFits(policy, 10, 100, 4); // true: 6 net
 * retryFits(policy, 50, 100, 50); // false: at the cap
 */
export function retryFits(policy: RetryBudgetPolicy, retries: number, requests: number, retriesSucceeded = 0): boolean {
  if (policy.mode === 'fixed') return retries + 1 <= retryBudgetLimit(policy, requests);
  const net = Math.max(retries - retriesSucceeded, 0);
  return net + 1 <= retryBudgetLimit(policy, requests) && retries + 1 <= retryBudgetCap(policy, requests);
}

/** What a budget window holds. */
export interface BudgetCounts {
  requests: number;
  retries: number;
  retriesSucceeded: number;
}

/** The budget as answers show it: the window's counts, the limit and the cap. */
export function budgetView(
  policy: RetryBudgetPolicy,
  { requests, retries, retriesSucceeded }: BudgetCounts,
): BudgetView {
  return {
    retries,
    retriesSucceeded,
    requests,
    limit: retryBudgetLimit(policy, requests),
    cap: retryBudgetCap(policy, requests),
    windowSeconds: policy.windowSeconds,
  };
}

/** `floor(ratio × requests + minRetriesPerSecond × windowSeconds)` in integers (see retryBudgetLimit). */
function windowAllowance(
  ratio: number,
  { minRetriesPerSecond, windowSeconds }: Pick<RetryBudgetPolicy, 'minRetriesPerSecond' | 'windowSeconds'>,
  requests: number,
): number {
  const perMillion = Math.round(ratio * SCALE);
  const floorMillionths = Math.round(minRetriesPerSecond * SCALE) * windowSeconds;
  const millions = Math.floor(requests / SCALE);
  const rest = requests - millions * SCALE;
  return perMillion * millions + Math.floor((perMillion * rest + floorMillionths) / SCALE);
}
