import type { FastifyBaseLogger } from 'fastify';

/** At most one line per this many ms about requests the store failed; the others are counted into the next. */
export const STORE_FAILURE_LOG_PERIOD_MS = 5000;

/**
 * The log lines about requests answered 503 because the store failed, without one line per
 * request: a store outage fails every request, and a line each (a thousand a second under load;
 * some 2,000 per coordinator in the fault suite's 5 s Cluster failover) would flood the logs.
 * The first failure of a period is logged at once through its request's logger (so with its
 * reqId); the rest are counted, and the period ends with one line that says how many and the last
 * one's message. `sluice_store_errors_total` counts every failed store call.
 *
 * @example
 * const log = new StoreFailureLog(app.log, { context: 'HttpError' });
 * log.failed(request.log, `store unavailable on POST /v1/shop/deps/pay/retry: ${error.message}`);
 */
export class StoreFailureLog {
  private periodEndsAt = -Infinity;
  private unlogged = 0;
  private lastUnlogged = '';
  private summary: NodeJS.Timeout | undefined;

  constructor(
    /** Where a period's closing line goes (it belongs to no one request). */
    private readonly logger: FastifyBaseLogger,
    /** What every line carries besides its message (the writer's context). */
    private readonly bindings: object,
    private readonly periodMs = STORE_FAILURE_LOG_PERIOD_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** One request failed on the store: logs `message` to `requestLog`, or counts it into the period's closing line. */
  failed(requestLog: FastifyBaseLogger, message: string): void {
    const now = this.now();
    if (now >= this.periodEndsAt) {
      this.periodEndsAt = now + this.periodMs;
      requestLog.warn(this.bindings, message);
      return;
    }
    this.unlogged++;
    this.lastUnlogged = message;
    if (this.summary === undefined) {
      this.summary = setTimeout(() => this.closePeriod(), this.periodEndsAt - now);
      this.summary.unref();
    }
  }

  /** Says how many went unlogged; those counted next are summed up a period later. */
  private closePeriod(): void {
    this.summary = undefined;
    const seconds = this.periodMs / 1000;
    this.logger.warn(
      this.bindings,
      `store unavailable on ${this.unlogged} more ${this.unlogged === 1 ? 'request' : 'requests'} ` +
        `within ${seconds} s, not logged one by one; the last: ${this.lastUnlogged}`,
    );
    this.unlogged = 0;
    this.periodEndsAt = this.now() + this.periodMs;
  }
}
