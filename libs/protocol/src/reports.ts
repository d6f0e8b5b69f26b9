/** POST /v1/{ns}/reports */
import type { BreakerSummary } from './retry';

export interface LatencyHistogram {
  boundsMs: number[];
  counts: number[];
}

export interface ProbeOutcome {
  token: string;
  success: boolean;
}

export interface DependencyReport {
  dep: string;
  requests: number;
  successes: number;
  failures: number;
  slow: number;
  retries?: number;
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
