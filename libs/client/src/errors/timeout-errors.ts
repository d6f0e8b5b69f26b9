import { SluiceError, marker } from './sluice-error';
import { GiveUpError } from './give-up-error';

// Time ran out: the caller’s deadline, or one attempt’s timeout.

/**
 * The deadline ran out: before an attempt could be sent, during one (it was aborted), or before
 * a retry's backoff would end.
 * @example
 * try { await payments.execute(call, { deadlineMs: 500 }); } catch (error) { if (isDeadlineExceededError(error)) reply.code(504); }
 */
export class DeadlineExceededError extends GiveUpError {
  /** Marker for {@link isDeadlineExceededError}. */
  readonly isDeadlineExceededError = true;

  constructor(dependency: string, lastError: unknown = undefined, attempts = 0) {
    super(dependency, 'deadline_exceeded', lastError, attempts, `${dependency}: the deadline was exceeded`);
  }
}

/**
 * One attempt took longer than its timeout and was aborted. Retriable (it is a timeout).
 * @example
 * if (isGiveUpError(error) && isAttemptTimeoutError(error.lastError)) metrics.timeouts.inc();
 */
export class AttemptTimeoutError extends SluiceError {
  /** Marker for {@link isAttemptTimeoutError}. */
  readonly isAttemptTimeoutError = true;

  constructor(
    /** The timeout that was exceeded, in ms. */
    readonly timeoutMs: number,
  ) {
    super(`the attempt timed out after ${timeoutMs} ms`);
  }
}

/**
 * True for a {@link DeadlineExceededError}.
 * @example
 * if (isDeadlineExceededError(error)) reply.code(504).send();
 */
export const isDeadlineExceededError = marker<DeadlineExceededError>('isDeadlineExceededError');

/**
 * True for an {@link AttemptTimeoutError}.
 * @example
 * if (isAttemptTimeoutError(error)) metrics.timeouts.inc();
 */
export const isAttemptTimeoutError = marker<AttemptTimeoutError>('isAttemptTimeoutError');
