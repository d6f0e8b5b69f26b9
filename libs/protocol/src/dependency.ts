/** GET /v1/{ns}/deps/{dep} */
import type { DependencyPolicy } from './policy';
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

export interface DependencyView {
  namespace: string;
  dependency: string;
  breaker: BreakerDetail;
  budget: BudgetView;
  /** Distinct reporters (client processes) that reported it within the budget window. */
  reporters: number;
  latency: LatencySummary;
  policy: DependencyPolicy;
}
