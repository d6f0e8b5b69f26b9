import { Inject, Injectable } from '@nestjs/common';
import { backoffDelay, preBudgetDenial } from '@sluice/core';
import type { BudgetView, DependencyPolicy, RetryDecision, RetryReason, RetryRequest } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/** Reasons that are facts about the call, not policy: enforced even in shadow mode. */
const ALWAYS_ENFORCED: ReadonlySet<RetryReason> = new Set(['not_retriable', 'not_idempotent']);

/** Decides "may I retry?": classification first, then one atomic store call for deadline and budget. */
@Injectable()
export class RetryService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly metrics: MetricsService,
  ) {}

  async decide(ref: DependencyRef, request: RetryRequest): Promise<RetryDecision> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    const delayMs = backoffDelay(policy.backoff, { attempt: request.attempt, retryAfterMs: request.retryAfterMs });
    const denial = preBudgetDenial(
      {
        attempt: request.attempt,
        idempotent: request.idempotent ?? false,
        status: request.status,
        error: request.error,
      },
      policy.retryBudget.maxAttempts,
    );
    let reason: RetryReason;
    let budget: BudgetView;
    if (denial) {
      reason = denial;
      budget = (await this.store.readDependency(ref, this.readWindows(policy))).budget;
    } else {
      await this.registry.admit(ref.namespace, ref.dependency);
      const outcome = await this.store.decideRetry(ref, {
        budget: policy.retryBudget,
        delayMs,
        deadlineMs: request.deadlineMs,
      });
      reason = outcome.verdict;
      budget = outcome.budget;
    }
    this.metrics.retryDecisions.inc({ namespace: ref.namespace, dependency: ref.dependency, result: reason });
    const shadow = policy.mode === 'shadow' && !ALWAYS_ENFORCED.has(reason);
    return {
      allow: reason === 'granted' || shadow,
      reason,
      delayMs,
      budget,
      breaker: { state: 'closed' },
      shadow,
    };
  }

  private readWindows(policy: DependencyPolicy) {
    return { budget: policy.retryBudget, outcomeWindowSeconds: policy.breaker.windowSeconds };
  }
}
