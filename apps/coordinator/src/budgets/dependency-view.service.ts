import { Inject, Injectable } from '@nestjs/common';
import { latencyQuantile } from '@sluice/core';
import type { DependencyView, LatencySummary } from '@sluice/protocol';
import { MetricsService } from '../metrics/metrics.service';
import type { DependencyRef, Store } from '@sluice/store';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
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
    private readonly metrics: MetricsService,
    private readonly registry: DependencyRegistry,
  ) {}

  /** p50, p95 and p99 as the upper bounds of their fixed buckets, also exported as gauges when `exported`. */
  private percentiles(ref: DependencyRef, counts: number[], exported: boolean): LatencySummary {
    const summary: LatencySummary = {
      p50: latencyQuantile(counts, 0.5),
      p95: latencyQuantile(counts, 0.95),
      p99: latencyQuantile(counts, 0.99),
      count: counts.reduce((sum, count) => sum + count, 0),
    };
    if (!exported) return summary;
    for (const [quantile, value] of [
      ['0.5', summary.p50],
      ['0.95', summary.p95],
      ['0.99', summary.p99],
    ] as const) {
      const labels = { namespace: ref.namespace, dependency: ref.dependency, quantile };
      if (value === null) this.metrics.dependencyLatency.remove(labels);
      else this.metrics.dependencyLatency.set(labels, value / 1000);
    }
    return summary;
  }

  async read(ref: DependencyRef): Promise<DependencyView> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    const { budget, outcomes, reporters, usage, breaker, latency } = await this.store.readDependency(
      ref,
      readPolicyOf(policy),
    );
    this.breakerMetrics.observe(ref, breaker);
    const percentiles = this.percentiles(ref, latency, this.registry.isRegistered(ref));
    const calls = outcomes.successes + outcomes.failures;
    return {
      namespace: ref.namespace,
      dependency: ref.dependency,
      breaker: {
        state: breaker.record.state,
        since: breaker.record.since,
        openUntil: breaker.record.openUntil,
        reason: breaker.record.reason,
        failureRate: calls === 0 ? 0 : outcomes.failures / calls,
        slowRate: calls === 0 ? 0 : outcomes.slow / calls,
        calls,
      },
      budget: { ...budget, mode: policy.retryBudget.mode ?? 'adaptive' },
      reporters,
      usage,
      latency: percentiles,
      policy,
    };
  }
}
