/** GET /v1/{ns}/deps/{dep} and GET /v1/{ns}/deps/{dep}/history */
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

/** One 10 s step of a dependency's history: what the reports within it said. */
export interface HistoryPoint {
  /** The step's start (epoch ms, a multiple of `stepMs`). */
  at: number;
  /** Calls reported within the step (successes and failures; slow calls are among them). */
  calls: number;
  failureRate: number;
  slowRate: number;
  /** The budget window as the step's last report left it. */
  budget: BudgetView;
  budgetUse: number;
  /** The breaker's state after the step's last report. */
  state: BreakerState;
}

/** The last 15 minutes of a dependency, one point per step that had reports, oldest first. */
export interface DependencyHistory {
  namespace: string;
  dependency: string;
  stepMs: number;
  spanMs: number;
  points: HistoryPoint[];
}
