/** What the connection log writes with: a warning and an info line. */
export interface ConnectionLogger {
  warn(message: string): void;
  log(message: string): void;
}

/** How often a Redis that stays unreachable is said again. */
export const REPEAT_EVERY_MS = 60_000;

/**
 * Says what the store waits for while Redis is unreachable, without a line per reconnect attempt:
 * the first failure at once, then one line a minute with how many attempts failed, and one line
 * when Redis answers again.
 */
export class RedisConnectionLog {
  private downSince: number | undefined;
  private failuresSinceSaid = 0;
  private lastSaid = 0;

  constructor(
    private readonly logger: ConnectionLogger,
    private readonly where: string,
    private readonly now: () => number = Date.now,
    private readonly repeatEveryMs = REPEAT_EVERY_MS,
  ) {}

  /** A connection error (ioredis emits one per failed attempt). */
  failed(error: Error): void {
    const now = this.now();
    if (this.downSince === undefined) {
      this.downSince = now;
      this.lastSaid = now;
      this.failuresSinceSaid = 0;
      this.logger.warn(
        `waiting for Redis at ${this.where} (${error.message}): decisions answer 503 store_unavailable ` +
          'and the SDKs use their local fallback until it answers; reconnecting',
      );
      return;
    }
    this.failuresSinceSaid += 1;
    if (now - this.lastSaid >= this.repeatEveryMs) {
      this.logger.warn(
        `still waiting for Redis at ${this.where} after ${seconds(now - this.downSince)} ` +
          `(${this.failuresSinceSaid} more failed attempts, the last: ${error.message})`,
      );
      this.lastSaid = now;
      this.failuresSinceSaid = 0;
    }
  }

  /** The connection is ready: says so once when it follows failures. */
  ready(): void {
    if (this.downSince === undefined) return;
    this.logger.log(`Redis at ${this.where} answers again after ${seconds(this.now() - this.downSince)}`);
    this.downSince = undefined;
  }
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
