/** GET /v1/{ns}/deps/{dep} */
import type { BudgetMode, DependencyPolicy } from './policy';
import type { BreakerState, BudgetView } from './retry';

export interface BreakerDetail {
  state: BreakerState;
  since: number | null;
  openUntil: number | null;
  /** The operator's reason for a forced state; null otherwise. */
  reason: string | null;
  failureRate: number;
  slowRate: number;
  calls: number;
}

export interface LatencySummary {
  p50: number | null;
  p95: number | null;
  p99: number | null;
  count: number;
}

/** What a dependency's limits hold now. */
export interface DependencyUsage {
  /** Concurrency leases held (0 without a concurrency limit). */
  leases: number;
  /** What is left of the rate limit's burst; null without a rate limit. */
  rateRemaining: number | null;
}

/** The budget in the dependency view: the decision's budget, and how it counts. */
export interface DependencyBudgetView extends BudgetView {
  mode: BudgetMode;
}

export interface DependencyView {
  namespace: string;
  dependency: string;
  breaker: BreakerDetail;
  budget: DependencyBudgetView;
  /** Distinct reporters (client processes) that reported it within the budget window. */
  reporters: number;
  usage: DependencyUsage;
  latency: LatencySummary;
  policy: DependencyPolicy;
}
