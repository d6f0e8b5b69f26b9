import { Inject, Injectable } from '@nestjs/common';
import type { DependencyView } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { readPolicyOf } from '../dependencies/read-policy';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/** The state of one dependency as the fleet sees it; a dependency never seen reads as empty. */
@Injectable()
export class DependencyViewService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly breakerMetrics: BreakerMetrics,
  ) {}

  async read(ref: DependencyRef): Promise<DependencyView> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    const { budget, outcomes, breaker } = await this.store.readDependency(ref, readPolicyOf(policy));
    this.breakerMetrics.observe(ref, breaker);
    const calls = outcomes.successes + outcomes.failures;
    return {
      namespace: ref.namespace,
      dependency: ref.dependency,
      breaker: {
        state: breaker.record.state,
        since: breaker.record.since,
        openUntil: breaker.record.openUntil,
        failureRate: calls === 0 ? 0 : outcomes.failures / calls,
        slowRate: calls === 0 ? 0 : outcomes.slow / calls,
        calls,
      },
      budget,
      latency: { p50: null, p95: null, p99: null, count: 0 },
      policy,
    };
  }
}
