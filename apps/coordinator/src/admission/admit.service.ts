import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AdmitDecision } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { validationFailed } from '../common/api-error';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { breakerSummaryOf } from '../breakers/breaker-summary';

/**
 * Decides "may I make this call?": one atomic store call checks the breaker (and hands out the
 * half-open probe), the rate limit and the concurrency limit. With a caller-chosen `requestId`, a
 * repeat answers the first grant, with its probe token and lease id (the store keeps them).
 */
@Injectable()
export class AdmitService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly breakerMetrics: BreakerMetrics,
    private readonly metrics: MetricsService,
  ) {}

  async admit(ref: DependencyRef, cost = 1, requestId?: string): Promise<AdmitDecision> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    if (policy.rateLimit && cost > policy.rateLimit.burst) {
      throw validationFailed([
        { field: 'cost', message: `must not exceed the rate limit's burst (${policy.rateLimit.burst})` },
      ]);
    }
    await this.registry.admit(ref.namespace, ref.dependency);
    const outcome = await this.store.admit(ref, {
      breaker: policy.breaker,
      probeToken: randomUUID(),
      rateLimit: policy.rateLimit,
      cost,
      concurrency: policy.concurrency,
      leaseId: randomUUID(),
      requestId,
    });
    this.breakerMetrics.observe(ref, outcome.breaker);
    const labels = { namespace: ref.namespace, dependency: ref.dependency };
    if (outcome.leasesInUse !== null) this.metrics.concurrencyInUse.set(labels, outcome.leasesInUse);
    const shadow = policy.mode === 'shadow';
    if (shadow && outcome.verdict !== 'granted') this.metrics.shadowDenials.inc({ ...labels, kind: 'admit' });
    return {
      allow: outcome.verdict === 'granted' || shadow,
      reason: outcome.verdict,
      // Forced open until reset: no end is known, so suggest the policy's open duration.
      retryAfterMs: outcome.retryAfterMs ?? policy.breaker.openMs,
      breaker: breakerSummaryOf(outcome.breaker.record),
      ...(outcome.probe ? { probe: outcome.probe } : {}),
      ...(outcome.lease ? { lease: outcome.lease } : {}),
      shadow,
    };
  }
}
