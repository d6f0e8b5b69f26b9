import { ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER } from '@sluice/protocol';
import { AttemptTimeoutError } from '../errors';
import type { AttemptContext } from '../execute-options';
import type { Expiring, TimeoutWatch } from '../timeout-watch';
import type { Admission } from '../decide/decider';

/**
 * One attempt: its context for the caller's function (with a signal made only when asked for), and
 * its timeout. {@link send} runs the function and answers its value or failure, or the attempt's
 * timeout, or its cancellation, whichever comes first.
 */
export class Attempt implements AttemptContext, Expiring {
  /** Aborted by the SDK for a reason that is no outcome of the dependency (a lost hedge, the caller's abort). */
  abandoned = false;
  /** Set once the attempt's outcome has been counted. */
  settled = false;
  /** Cancels the attempt when the caller's signal aborts (set while it listens). */
  onCallerAbort: (() => void) | undefined;
  expiresAt: number;
  watchToken = 0;
  private controller: AbortController | undefined;
  private abortReason: unknown;
  /** Ends a pending {@link send} with a failure. */
  private fail: ((reason: unknown) => void) | undefined;

  constructor(
    readonly attempt: number,
    /** What the attempt may take, ms: its timeout within the rest of the deadline. */
    readonly deadlineMs: number,
    private readonly key: string | undefined,
    readonly hedge: boolean,
    /** When it started, on the client's clock. */
    readonly startedAt: number,
    /** What let it out. */
    readonly admission: Admission,
    /** When it started in real time (epoch ms), for its timeout. */
    realStart: number,
  ) {
    this.expiresAt = realStart + deadlineMs;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get headers(): Record<string, string> {
    const headers: Record<string, string> = {
      [DEADLINE_HEADER]: String(Math.max(0, Math.floor(this.deadlineMs))),
      [ATTEMPT_HEADER]: String(this.attempt),
    };
    if (this.key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = this.key;
    return headers;
  }

  /**
   * Runs `fn` with this attempt as its context, watched for its timeout: its value (as it is, for a
   * synchronous one), or a promise of it that rejects at the timeout or on {@link cancel}.
   */
  send<T>(fn: (context: AttemptContext) => PromiseLike<T> | T, timeouts: TimeoutWatch): Promise<T> | T {
    const result = fn(this);
    if (result === null || typeof (result as PromiseLike<T> | undefined)?.then !== 'function') return result as T;
    timeouts.add(this);
    return new Promise<T>((resolve, reject) => {
      this.fail = reject;
      (result as PromiseLike<T>).then(resolve, reject);
    });
  }

  /** The timeout passed: the attempt is aborted and fails with an {@link AttemptTimeoutError}. */
  expire(): void {
    const error = new AttemptTimeoutError(this.deadlineMs);
    this.abort(error);
    this.fail?.(error);
  }

  /** Ends the attempt as abandoned (a lost hedge, the caller's abort): aborted, failed with `reason`, no outcome counted. */
  cancel(reason: unknown): void {
    this.abandoned = true;
    this.abort(reason);
    this.fail?.(reason);
  }

  private abort(reason: unknown): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}
