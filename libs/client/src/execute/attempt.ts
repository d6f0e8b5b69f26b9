import { ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER } from '@sluice/protocol';
import { AttemptTimeoutError } from '../errors';
import type { AttemptContext } from '../execute-options';
import type { Expiring, TimeoutWatch } from '../timeout-watch';
import type { Admission } from '../decide/decider';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';

/**
 * One attempt: its context for the caller's function (with a signal made only when asked for), and
 * its timeout. {@link sendAttempt} runs it.
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
  /** Ends the attempt with a failure while it runs (its timeout, its cancellation); set by {@link sendAttempt}. */
  fail: ((reason: unknown) => void) | undefined;
  /** Set once the attempt has ended, whichever way came first. */
  ended = false;

  constructor(
    /** The policy and the call it is an attempt of, and the caller's function it runs. */
    readonly policy: CallPolicy,
    readonly call: Call,
    readonly work: (context: AttemptContext) => unknown,
    readonly attempt: number,
    /** What the attempt may take, ms: its timeout within the rest of the deadline. */
    readonly deadlineMs: number,
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
    if (this.call.key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = this.call.key;
    return headers;
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

/** How an ended attempt goes on: one function for every attempt of a kind (no closure is made per attempt). */
export type AttemptEnding<R> = (attempt: Attempt, outcome: unknown) => R | PromiseLike<R>;

/**
 * Sends an attempt: runs its `work` with it as its context, watched for its timeout. The first of
 * the work's value, its failure, the attempt's timeout or its cancellation ends it, once:
 * `onValue` or `onFailure` gets the attempt and the value or error, and what it returns (after a
 * failure, a promise of the rest of the call) is what the returned promise settles with.
 */
export function sendAttempt<R>(
  attempt: Attempt,
  timeouts: TimeoutWatch,
  onValue: AttemptEnding<R>,
  onFailure: AttemptEnding<R>,
): Promise<R> {
  let result: unknown;
  try {
    result = attempt.work(attempt);
  } catch (error) {
    attempt.ended = true;
    return Promise.resolve(onFailure(attempt, error));
  }
  if (result === null || typeof (result as PromiseLike<unknown> | undefined)?.then !== 'function') {
    attempt.ended = true;
    return Promise.resolve(onValue(attempt, result));
  }
  timeouts.add(attempt);
  return new Promise<R>((resolve) => {
    const fail = (error: unknown) => {
      if (attempt.ended) return;
      attempt.ended = true;
      resolve(onFailure(attempt, error));
    };
    attempt.fail = fail;
    (result as PromiseLike<unknown>).then((value) => {
      if (attempt.ended) return;
      attempt.ended = true;
      resolve(onValue(attempt, value));
    }, fail);
  });
}
