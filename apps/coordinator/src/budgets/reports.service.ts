import { Injectable } from '@nestjs/common';
import { LATENCY_BOUNDS_MS, rebucket, type BudgetRule } from '@sluice/core';
import type {
  DependencyReport,
  LatencyHistogram,
  ReportRequest,
  ReportResponse,
  RetryBudgetPolicy,
} from '@sluice/protocol';
import { validationFailed } from '../common/api-error';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { breakerSummaryOf } from '../breakers/breaker-summary';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService, UNREGISTERED } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { ReportMerger } from './report-merger';
import { reportProblems } from './report-rules';

/**
 * Records batched outcomes and probe results. Each dependency's entry goes to the ReportMerger:
 * the reports this instance receives for it within a few ms are written in one atomic store call.
 */
@Injectable()
export class ReportsService {
  constructor(
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly breakerMetrics: BreakerMetrics,
    private readonly merger: ReportMerger,
    private readonly metrics: MetricsService,
  ) {}

  async record(namespace: string, report: ReportRequest): Promise<ReportResponse> {
    const problems = reportProblems(report);
    if (problems.length > 0) throw validationFailed(problems);
    const entries = mergeByDependency(report.deps);
    await Promise.all(
      entries.map(({ entry, index }) => this.registry.admit(namespace, entry.dep, `deps.${index}.dep`)),
    );
    const response: ReportResponse = { deps: {} };
    await Promise.all(
      entries.map(async ({ entry }) => {
        const policy = await this.policies.forDependency(namespace, entry.dep);
        const { breaker, reporters } = await this.merger.record(
          { namespace, dependency: entry.dep },
          {
            reporter: report.reporter,
            requests: entry.requests,
            successes: entry.successes,
            failures: entry.failures,
            slow: entry.slow,
            retries: entry.retries ?? 0,
            retriesSucceeded: entry.retriesSucceeded ?? 0,
            probes: entry.probes ?? [],
            latency: entry.latency && rebucket(entry.latency.boundsMs, entry.latency.counts),
          },
          {
            budgetWindowSeconds: policy.retryBudget.windowSeconds,
            breaker: policy.breaker,
            budgetRule: budgetRuleOf(policy.retryBudget),
          },
        );
        this.breakerMetrics.observe({ namespace, dependency: entry.dep }, breaker);
        if (entry.retriesSucceeded) {
          const ref = { namespace, dependency: entry.dep };
          this.metrics.retriesSucceeded.inc(
            this.registry.isRegistered(ref) ? ref : UNREGISTERED,
            entry.retriesSucceeded,
          );
        }
        response.deps[entry.dep] = { breaker: breakerSummaryOf(breaker.record), reporters };
      }),
    );
    return response;
  }
}

/** How the budget counts, for the limit and cap the dependency's history keeps with each step. */
function budgetRuleOf({ mode, ratio, maxRatio, minRetriesPerSecond }: RetryBudgetPolicy): BudgetRule {
  return { ratio, minRetriesPerSecond, ...(mode ? { mode } : {}), ...(maxRatio !== undefined ? { maxRatio } : {}) };
}

/** Two reported histograms as one, on the fixed bounds. */
function mergeHistograms(a?: LatencyHistogram, b?: LatencyHistogram): LatencyHistogram | undefined {
  if (!a || !b) return a ?? b;
  const left = rebucket(a.boundsMs, a.counts);
  const right = rebucket(b.boundsMs, b.counts);
  return { boundsMs: [...LATENCY_BOUNDS_MS], counts: left.map((count, i) => count + right[i]) };
}

/** Entries for the same dependency in one batch are added together. */
function mergeByDependency(entries: DependencyReport[]): Array<{ entry: DependencyReport; index: number }> {
  const merged = new Map<string, { entry: DependencyReport; index: number }>();
  entries.forEach((entry, index) => {
    const existing = merged.get(entry.dep);
    if (!existing) {
      merged.set(entry.dep, { entry: { ...entry }, index });
      return;
    }
    existing.entry.requests += entry.requests;
    existing.entry.successes += entry.successes;
    existing.entry.failures += entry.failures;
    existing.entry.slow += entry.slow;
    existing.entry.retries = (existing.entry.retries ?? 0) + (entry.retries ?? 0);
    existing.entry.retriesSucceeded = (existing.entry.retriesSucceeded ?? 0) + (entry.retriesSucceeded ?? 0);
    existing.entry.probes = [...(existing.entry.probes ?? []), ...(entry.probes ?? [])];
    existing.entry.latency = mergeHistograms(existing.entry.latency, entry.latency);
  });
  return [...merged.values()];
}
