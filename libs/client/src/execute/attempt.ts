import { afterPendingReads } from '@sluice/core';
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
  /** Sent on a retry the budget granted: its success is reported as a retry that succeeded. */
  retryGranted = false;
  /** Cancels the attempt when the caller's signal aborts (set while it listens). */
  onCallerAbort: (() => void) | undefined = undefined;
  expiresAt: number;
  watchPrev: Expiring | undefined = undefined;
  watchNext: Expiring | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private abortReason: unknown = undefined;
  /** Set once the attempt has ended, whichever way came first. */
  ended = false;
  // Set by sendAttempt while its work runs: the promise it returned, and how the attempt goes on.
  // Every field is set in the constructor, so that all attempts share one shape.
  private settle: ((value: unknown) => void) | undefined = undefined;
  private onValue: AttemptEnding<unknown> | undefined = undefined;
  private onFailure: AttemptEnding<unknown> | undefined = undefined;

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

  /**
   * The timeout passed: the attempt is aborted and fails with an {@link AttemptTimeoutError};
   * unless its answer, there before the timeout but unread behind a busy turn of the event loop,
   * is read first.
   */
  expire(): void {
    afterPendingReads(() => {
      if (this.ended) return;
      const error = new AttemptTimeoutError(this.deadlineMs);
      this.abort(error);
      this.fail(error);
    });
  }

  /** Ends the attempt as abandoned (a lost hedge, the caller's abort): aborted, failed with `reason`, no outcome counted. */
  cancel(reason: unknown): void {
    this.abandoned = true;
    this.abort(reason);
    this.fail(reason);
  }

  /** @internal How {@link sendAttempt} goes on once the work it watches is under way. */
  watch(settle: (value: unknown) => void, onValue: AttemptEnding<unknown>, onFailure: AttemptEnding<unknown>): void {
    this.settle = settle;
    this.onValue = onValue;
    this.onFailure = onFailure;
  }

  /** The work answered `value`: unless the attempt already ended, it ends with it. */
  answer(value: unknown): void {
    if (this.ended || this.settle === undefined) return;
    this.ended = true;
    this.settle(this.onValue!(this, value));
  }

  /** The attempt failed with `error` (the work's failure, its timeout, its cancellation): unless it already ended, it ends with it. */
  fail(error: unknown): void {
    if (this.ended || this.settle === undefined) return;
    this.ended = true;
    this.settle(this.onFailure!(this, error));
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
  // The executor is made per attempt: handing `resolve` out through a module variable instead writes
  // a new object into an old one, which costs more than the closure.
  const settled = new Promise<R>((resolve) => attempt.watch(resolve as (value: unknown) => void, onValue, onFailure));
  (result as PromiseLike<unknown>).then(
    (value) => attempt.answer(value),
    (error) => attempt.fail(error),
  );
  return settled;
}
