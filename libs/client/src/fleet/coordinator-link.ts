import { isConfigError, isCoordinatorUnavailableError, type ConfigError } from '../errors';
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
 * The coordinator refuses this client's token (401/403): emitted by {@link Sluice.onConfigError}
 * when the refusal starts, and again when it changes (another status or message) or starts anew
 * after the coordinator accepted the token in between.
 * @example
 * sluice.onConfigError(({ error, during }) => alerts.page(`Sluice token refused during ${during}: ${error.message}`));
 */
export interface ConfigErrorEvent {
  /** The refusal: its `status` (401 or 403), `code` and the coordinator's message. */
  error: ConfigError;
  /** What the SDK was doing when it was refused (e.g. `ready`, `report`, `poll`, `retry`). */
  during: string;
}

/**
 * A logger for the SDK's few log lines (fallback switches, misconfiguration). `error` is used for a
 * configuration error (at most one line every 30 s); without it, `warn` is.
 * @example
 * new Sluice({ baseUrls: ['http://sluice:8080'], namespace: 'shop', logger: pino() });
 */
export interface SluiceLogger {
  error?(message: string): void;
  warn(message: string): void;
  info(message: string): void;
}

export const consoleLogger: SluiceLogger = {
  error: (message) => console.error(`sluice: ${message}`),
  warn: (message) => console.warn(`sluice: ${message}`),
  info: (message) => console.info(`sluice: ${message}`),
};

export const silentLogger: SluiceLogger = { error: () => undefined, warn: () => undefined, info: () => undefined };

/** A configuration error is logged at most once in this many ms. */
export const CONFIG_ERROR_LOG_INTERVAL_MS = 30_000;

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
 *
 * A 401 or 403 is an answer, not an outage: the coordinator refuses the token. It never counts
 * toward the fallback (and ends one under way); it is kept as {@link configError} until an
 * exchange succeeds, announced on {@link configErrors}, and logged at most every 30 s.
 */
export class CoordinatorLink {
  /** True while the local fallback decides. */
  fallback = false;
  readonly changes = new EventEmitter<FallbackChange>();
  /** The coordinator's refusal of the token, while it stands. */
  configError: ConfigError | undefined;
  readonly configErrors = new EventEmitter<ConfigErrorEvent>();
  private lastConfigLogAt = Number.NEGATIVE_INFINITY;
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
    if (isConfigError(error)) {
      this.refused(during, error);
      return false;
    }
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
    if (this.configError) {
      this.configError = undefined;
      this.logger.info(`the coordinator accepts this client's token again (${during})`);
    }
    if (!this.fallback) return;
    this.fallback = false;
    this.logger.info(`coordinator answers again (${during}); back to fleet decisions`);
    this.changes.emit({ active: false, during });
  }

  /** The coordinator refused the token: kept, announced when new, logged at most every 30 s; any fallback ends. */
  private refused(during: string, error: ConfigError): void {
    const previous = this.configError;
    this.configError = error;
    this.consecutiveFailures = 0;
    const now = this.now();
    if (now - this.lastConfigLogAt >= CONFIG_ERROR_LOG_INTERVAL_MS) {
      this.lastConfigLogAt = now;
      const line = `${error.message} during ${during}: check the client's token and namespace; no fallback is used for this`;
      (this.logger.error ?? this.logger.warn).call(this.logger, line);
    }
    if (this.fallback) {
      this.fallback = false;
      this.changes.emit({ active: false, during });
    }
    if (previous?.status !== error.status || previous.message !== error.message) {
      this.configErrors.emit({ error, during });
    }
  }
}
