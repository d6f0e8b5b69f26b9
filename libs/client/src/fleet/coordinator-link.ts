import { isCoordinatorUnavailableError } from '../errors';
import { EventEmitter } from '../events';

/**
 * Where the SDK's fleet decisions come from changed: `active` true means the coordinator stopped
 * answering and the local fallback decides; false means the coordinator answers again.
 * @example
 * sluice.onFallback(({ active, during, error }) => log.warn(`fallback ${active} (${during})`, error));
 */
export interface FallbackChange {
  active: boolean;
  /** What the SDK was doing when it noticed (e.g. `retry`, `report`, `poll`). */
  during: string;
  /** The coordinator failure that started the fallback. */
  error?: unknown;
}

/**
 * A logger for the SDK's few log lines (fallback switches, misconfiguration).
 * @example
 * new Sluice({ baseUrls: ['http://sluice:8080'], namespace: 'shop', logger: pino() });
 */
export interface SluiceLogger {
  warn(message: string): void;
  info(message: string): void;
}

export const consoleLogger: SluiceLogger = {
  warn: (message) => console.warn(`sluice: ${message}`),
  info: (message) => console.info(`sluice: ${message}`),
};

export const silentLogger: SluiceLogger = { warn: () => undefined, info: () => undefined };

/** Consecutive failed exchanges with the coordinator before the SDK switches to its fallback. */
export const FAILURES_BEFORE_FALLBACK = 3;

/**
 * Tracks whether the coordinator answers, and switches the SDK to and from its local fallback.
 * One slow or failed exchange is a hiccup, not an outage: the fallback takes over only after
 * FAILURES_BEFORE_FALLBACK in a row, each from an exchange started after the previous one failed.
 * Exchanges already under way when one fails (a burst of decisions meeting one slow moment) add
 * no evidence, so a busy coordinator does not switch a client whose exchanges merely overlap.
 * A 503 `overloaded` is no evidence either: the instance shed the request before doing any work,
 * it is not down; such an answer neither counts nor resets the count.
 */
export class CoordinatorLink {
  /** True while the local fallback decides. */
  fallback = false;
  readonly changes = new EventEmitter<FallbackChange>();
  private consecutiveFailures = 0;
  /** When the last counted failure was noticed. */
  private lastFailureAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly logger: SluiceLogger,
    private readonly mode: string,
    private readonly failuresBeforeFallback = FAILURES_BEFORE_FALLBACK,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts a failed exchange, unless it started (`startedAt`, on the same clock) before the last
   * counted failure was noticed, or it was shed (`overloaded`); true once the fallback decides.
   */
  failed(during: string, error: unknown, startedAt?: number): boolean {
    if (this.fallback) return true;
    if (isCoordinatorUnavailableError(error) && error.overloaded) return false;
    if (startedAt !== undefined && startedAt < this.lastFailureAt) return false;
    this.lastFailureAt = this.now();
    this.consecutiveFailures += 1;
    if (this.consecutiveFailures < this.failuresBeforeFallback) return false;
    this.fallback = true;
    const why = (error as Error)?.message ?? String(error);
    this.logger.warn(`coordinator unavailable during ${during} (${why}); using the ${this.mode} fallback`);
    this.changes.emit({ active: true, during, error });
    return true;
  }

  succeeded(during: string): void {
    this.consecutiveFailures = 0;
    if (!this.fallback) return;
    this.fallback = false;
    this.logger.info(`coordinator answers again (${during}); back to fleet decisions`);
    this.changes.emit({ active: false, during });
  }
}
