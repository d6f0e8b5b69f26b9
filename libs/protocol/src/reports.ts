/** POST /v1/{ns}/reports */
import type { BreakerSummary } from './retry';

export interface LatencyHistogram {
  boundsMs: number[];
  /** One more entry than `boundsMs`: the last counts samples above the largest bound. */
  counts: number[];
}

export interface ProbeOutcome {
  token: string;
  success: boolean;
}

export interface DependencyReport {
  dep: string;
  /** First attempts: the budget's deposits. */
  requests: number;
  successes: number;
  failures: number;
  slow: number;
  /**
   * Retries this reporter made without the coordinator's grant (its local fallback decided) since
   * its last report: charged to the fleet's budget, so a fallback cannot spend it twice.
   */
  retries?: number;
  /**
   * Retries granted to this reporter (by the coordinator or its local fallback) whose attempt
   * succeeded, since its last report: an adaptive budget gives each one's grant back.
   */
  retriesSucceeded?: number;
  latency?: LatencyHistogram;
  probes?: ProbeOutcome[];
}

export interface ReportRequest {
  reporter: string;
  deps: DependencyReport[];
}

export interface ReportResponse {
  deps: Record<string, ReportedDependency>;
}

/** A reported dependency after the report. */
export interface ReportedDependency {
  breaker: BreakerSummary;
  /**
   * Distinct reporters of the dependency in its budget window, the caller included: a client's
   * share of the fleet's budget and limits is 1 / reporters.
   */
  reporters: number;
}
