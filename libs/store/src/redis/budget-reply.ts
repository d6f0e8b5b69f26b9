import { DEFAULT_DEPENDENCY_POLICY, type BudgetView, type RetryBudgetPolicy } from '@sluice/protocol';

/** Values per decision in decide_retry-4.lua's and decide_retries-N.lua's replies, before the breaker tail. */
export const RETRY_DECISION_VALUES = 8;

/** The budget mode and maxRatio as the scripts take them (ARGV), after the other budget numbers. */
export function budgetModeArgs(budget: RetryBudgetPolicy): [mode: string, maxRatio: number] {
  const defaults = DEFAULT_DEPENDENCY_POLICY.retryBudget;
  return [budget.mode ?? defaults.mode ?? 'adaptive', budget.maxRatio ?? defaults.maxRatio ?? budget.ratio];
}

/**
 * The budget of a script reply, from `at`: retries, retriesSucceeded, requests, limit, cap
 * (decide_retry-4.lua's values 2-6, read_dependency-7.lua's first five).
 */
export function budgetFromReply(reply: Array<string | number>, at: number, windowSeconds: number): BudgetView {
  // Read in place: no copy of the reply per decision.
  return {
    retries: Number(reply[at]),
    retriesSucceeded: Number(reply[at + 1]),
    requests: Number(reply[at + 2]),
    limit: Number(reply[at + 3]),
    cap: Number(reply[at + 4]),
    windowSeconds,
  };
}
