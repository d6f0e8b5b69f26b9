import type { Clock } from '@sluice/core';
import { MAX_REPORT_ENTRIES, type DependencyReport, type ReportResponse } from '@sluice/protocol';
import { isCoordinatorUnavailableError } from '../errors';
import type { CoordinatorTransport } from '../transport/coordinator-transport';
import type { CoordinatorLink } from './coordinator-link';
import type { FleetDependency } from './fleet-dependency';

export interface ReporterOptions {
  reporter: string;
  intervalMs: number;
  timeoutMs: number;
  /** Counts older than this are dropped rather than reported late (the fleet's window has moved on). */
  maxAgeMs: number;
}

/**
 * Batches outcomes, latencies and request counts of every dependency into one POST /reports per
 * interval; a probe outcome is sent at once. A failed delivery keeps the counts for the next one
 * and tells the link; a delivery that works tells it too, which is how the SDK notices the
 * coordinator is back.
 */
export class Reporter {
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** The delivery after the one under way, for what became pending meanwhile. */
  private next: Promise<void> | undefined;
  /**
   * Set once a coordinator refused `retriesSucceeded` (400 naming it): one that predates adaptive
   * budgets. Reports then leave the field out, so the rest of every report still counts.
   */
  private withoutSuccesses = false;

  constructor(
    private readonly dependencies: () => Iterable<FleetDependency>,
    private readonly transport: CoordinatorTransport,
    private readonly link: CoordinatorLink,
    private readonly clock: Clock,
    private readonly options: ReporterOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Sends what is pending now, and resolves once it was delivered (or failed): with a delivery
   * under way, what is pending goes in the one after it, which this waits for too.
   */
  flush(): Promise<void> {
    if (this.flushing) {
      this.next ??= this.flushing.then(() => {
        this.next = undefined;
        return this.flush();
      });
      return this.next;
    }
    this.flushing = this.deliver().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async deliver(): Promise<void> {
    const now = this.clock.now();
    const taken: Array<{ dependency: FleetDependency; report: DependencyReport; since: number }> = [];
    for (const dependency of this.dependencies()) {
      if (!dependency.hasPending) continue;
      const since = dependency.pendingSince;
      if (now - since > this.options.maxAgeMs) {
        dependency.dropPending(now);
        continue;
      }
      taken.push({ dependency, report: dependency.takeReport(now), since });
    }
    for (let start = 0; start < taken.length; start += MAX_REPORT_ENTRIES) {
      const batch = taken.slice(start, start + MAX_REPORT_ENTRIES);
      try {
        const answer = await this.send(batch.map((entry) => entry.report));
        this.link.succeeded('report');
        for (const { dependency } of batch) {
          dependency.heldDenial.reported(now);
          const reported = answer.deps?.[dependency.name];
          if (reported?.breaker?.state) dependency.applyBreaker(reported.breaker);
          if (Number.isInteger(reported?.reporters) && reported.reporters > 0)
            dependency.fleetSize = reported.reporters;
        }
      } catch (error) {
        this.link.failed('report', error);
        for (const { dependency, report, since } of taken.slice(start)) dependency.restoreReport(report, since);
        return;
      }
    }
  }

  /** One POST /reports; sent again without `retriesSucceeded` when the coordinator does not know the field. */
  private async send(reports: DependencyReport[]): Promise<ReportResponse> {
    const deps = this.withoutSuccesses ? reports.map(withoutRetriesSucceeded) : reports;
    try {
      return await this.transport.report({ reporter: this.options.reporter, deps }, this.options.timeoutMs);
    } catch (error) {
      if (this.withoutSuccesses || !refusesRetriesSucceeded(error)) throw error;
      this.withoutSuccesses = true;
      return this.send(reports);
    }
  }
}

/** A 400 `validation_failed` naming `deps.N.retriesSucceeded` (the transport keeps the answer's start in its message). */
function refusesRetriesSucceeded(error: unknown): boolean {
  return (
    isCoordinatorUnavailableError(error) &&
    error.status === 400 &&
    error.code === 'validation_failed' &&
    /\bdeps\.\d+\.retriesSucceeded\b/.test(error.message)
  );
}

function withoutRetriesSucceeded(report: DependencyReport): DependencyReport {
  if (report.retriesSucceeded === undefined) return report;
  const { retriesSucceeded: _left, ...rest } = report;
  return rest;
}
