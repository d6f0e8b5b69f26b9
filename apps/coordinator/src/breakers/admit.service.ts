import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AdmitDecision } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { BreakerMetrics } from './breaker-metrics';

/** Decides "may I make this call?": one atomic store call for the breaker and its probe lease. */
@Injectable()
export class AdmitService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly breakerMetrics: BreakerMetrics,
  ) {}

  async admit(ref: DependencyRef): Promise<AdmitDecision> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    await this.registry.admit(ref.namespace, ref.dependency);
    const outcome = await this.store.admit(ref, { breaker: policy.breaker, probeToken: randomUUID() });
    this.breakerMetrics.observe(ref, outcome.breaker);
    const shadow = policy.mode === 'shadow';
    return {
      allow: outcome.verdict === 'granted' || shadow,
      reason: outcome.verdict,
      // Forced open until reset: no end is known, so suggest the policy's open duration.
      retryAfterMs: outcome.retryAfterMs ?? policy.breaker.openMs,
      breaker: { state: outcome.breaker.record.state },
      ...(outcome.probe ? { probe: outcome.probe } : {}),
      shadow,
    };
  }
}
