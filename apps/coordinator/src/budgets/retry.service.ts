import { Inject, Injectable } from '@nestjs/common';
import { backoffDelay, preBudgetDenial } from '@sluice/core';
import type { BudgetView, RetryDecision, RetryReason, RetryRequest } from '@sluice/protocol';
import type { BreakerSnapshot, DependencyRef, Store } from '@sluice/store';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { readPolicyOf } from '../dependencies/read-policy';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService, UNREGISTERED } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/** Reasons that are facts about the call, not policy: enforced even in shadow mode. */
const ALWAYS_ENFORCED: ReadonlySet<RetryReason> = new Set(['not_retriable', 'not_idempotent']);

/** Decides "may I retry?": classification first, then one atomic store call for breaker, deadline and budget. */
@Injectable()
export class RetryService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly metrics: MetricsService,
    private readonly breakerMetrics: BreakerMetrics,
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
    let breaker: BreakerSnapshot;
    let decidedDelayMs = delayMs;
    if (denial) {
      reason = denial;
      ({ budget, breaker } = await this.store.readDependency(ref, readPolicyOf(policy)));
    } else {
      await this.registry.admit(ref.namespace, ref.dependency);
      const outcome = await this.store.decideRetry(ref, {
        budget: policy.retryBudget,
        delayMs,
        deadlineMs: request.deadlineMs,
        latencyWindowSeconds: policy.breaker.windowSeconds,
        requestId: request.requestId,
      });
      // A repeat of a kept grant answers that grant's delay.
      ({ verdict: reason, budget, breaker, delayMs: decidedDelayMs } = outcome);
    }
    this.breakerMetrics.observe(ref, breaker);
    const labels = this.registry.isRegistered(ref) ? ref : UNREGISTERED;
    this.metrics.retryDecisions.inc({ namespace: labels.namespace, dependency: labels.dependency, result: reason });
    const shadow = policy.mode === 'shadow' && !ALWAYS_ENFORCED.has(reason);
    if (shadow && reason !== 'granted') {
      this.metrics.shadowDenials.inc({ namespace: labels.namespace, dependency: labels.dependency, kind: 'retry' });
    }
    return {
      allow: reason === 'granted' || shadow,
      reason,
      delayMs: decidedDelayMs,
      budget,
      breaker: { state: breaker.record.state },
      shadow,
    };
  }
}
