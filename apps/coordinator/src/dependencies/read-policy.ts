import type { DependencyPolicy } from '@sluice/protocol';
import type { DependencyReadPolicy } from '@sluice/store';

/** What a store read of a dependency needs from its policy: the budget and the breaker window. */
export function readPolicyOf(policy: DependencyPolicy): DependencyReadPolicy {
  return {
    budget: policy.retryBudget,
    outcomeWindowSeconds: policy.breaker.windowSeconds,
    ...(policy.rateLimit ? { rateLimit: policy.rateLimit } : {}),
  };
}
