import { Inject, Injectable } from '@nestjs/common';
import { backoffDelay, preBudgetDenial } from '@sluice/core';
import type { BudgetView, DependencyPolicy, RetryDecision, RetryReason, RetryRequest } from '@sluice/protocol';
import type { BreakerSnapshot, DependencyRef, Store } from '@sluice/store';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { breakerSummaryOf } from '../breakers/breaker-summary';
import { readPolicyOf } from '../dependencies/read-policy';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService, UNREGISTERED } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/** Reasons that are facts about the call, not policy: enforced even in shadow mode. */
const ALWAYS_ENFORCED: ReadonlySet<RetryReason> = new Set(['not_retriable', 'not_idempotent']);
/** Denials that carry retryAfterMs: waiting alone can end them. */
const WAITED_OUT: ReadonlySet<RetryReason> = new Set(['budget_exhausted', 'breaker_open']);

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
    // The cached policy and a fresh registration are answered without a promise.
    const policy =
      this.policies.cachedForDependency(ref.namespace, ref.dependency) ??
      (await this.policies.forDependency(ref.namespace, ref.dependency));
    const { delayMs, denial } = beforeTheStore(policy, request);
    let decided: DecidedAsk;
    if (denial) {
      const { budget, breaker } = await this.store.readDependency(ref, readPolicyOf(policy));
      decided = { reason: denial, budget, breaker, delayMs, retryAfterMs: null };
    } else {
      if (!this.registry.admitted(ref.namespace, ref.dependency)) await this.registry.admit(ref.namespace, ref.dependency);
      const outcome = await this.store.decideRetry(ref, {
        budget: policy.retryBudget,
        delayMs,
        deadlineMs: request.deadlineMs,
        latencyWindowSeconds: policy.breaker.windowSeconds,
        requestId: request.requestId,
      });
      // A repeat of a kept grant answers that grant's delay.
      decided = {
        reason: outcome.verdict,
        budget: outcome.budget,
        breaker: outcome.breaker,
        delayMs: outcome.delayMs,
        retryAfterMs: outcome.retryAfterMs,
      };
    }
    this.breakerMetrics.observe(ref, decided.breaker);
    return this.answer(ref, policy, decided);
  }

  /** The answer to one decided ask (single or batched): counted, shadow mode applied. */
  answer(ref: DependencyRef, policy: DependencyPolicy, decided: DecidedAsk): RetryDecision {
    const { reason, budget, breaker } = decided;
    const labels = this.registry.isRegistered(ref) ? ref : UNREGISTERED;
    this.metrics.retryDecisionCounts.child(labels.namespace, labels.dependency, reason).inc();
    const shadow = policy.mode === 'shadow' && !ALWAYS_ENFORCED.has(reason);
    if (shadow && reason !== 'granted') {
      this.metrics.shadowDenials.inc({ namespace: labels.namespace, dependency: labels.dependency, kind: 'retry' });
    }
    // The cap beside the exhausted-budget alert (denials are few: callers hold them for retryAfterMs).
    if (reason === 'budget_exhausted' && labels === ref) this.metrics.retryBudgetCap.set(ref, budget.cap);
    const allow = reason === 'granted' || shadow;
    const decision: RetryDecision = {
      allow,
      reason,
      delayMs: decided.delayMs,
      budget,
      breaker: breakerSummaryOf(breaker.record),
      shadow,
    };
    // A denial that waiting ends; with no known end (forced open until reset, half-open), the open duration.
    if (!allow && WAITED_OUT.has(reason)) decision.retryAfterMs = decided.retryAfterMs ?? policy.breaker.openMs;
    return decision;
  }
}

/** A decision's parts once made, before the metrics and shadow mode. */
export interface DecidedAsk {
  reason: RetryReason;
  budget: BudgetView;
  breaker: BreakerSnapshot;
  delayMs: number;
  /** For budget_exhausted and breaker_open: when the same ask could be granted; null when not known. */
  retryAfterMs: number | null;
}

/** What an ask costs before the store: its backoff, and a denial no state is needed for (or none). */
export function beforeTheStore(
  policy: DependencyPolicy,
  request: RetryRequest,
): { delayMs: number; denial: RetryReason | null } {
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
  return { delayMs, denial };
}
