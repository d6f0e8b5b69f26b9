import { marker } from './sluice-error';
import { GiveUpError, type LimitReason } from './give-up-error';

// A call refused by a dependency’s rate or concurrency limit.

/**
 * The dependency's rate limit or concurrency limit refused the call: it was not sent (again).
 * `retryAfterMs` is when the limit expects to admit it: exact for a rate limit; for a concurrency
 * limit, the earliest expiry of a held lease (slots are usually released much sooner). With
 * `whenLimited: 'wait'` (the default) the SDK has already waited as long as the deadline allowed.
 * @example
 * try {
 *   await geocoder.execute(({ signal }) => geocode(address, { signal }));
 * } catch (error) {
 *   if (isLimitedError(error)) return reply.code(429).header('retry-after', Math.ceil(error.retryAfterMs / 1000)).send();
 *   throw error;
 * }
 */
export class LimitedError extends GiveUpError {
  /** Marker for {@link isLimitedError}. */
  readonly isLimitedError = true;
  declare readonly reason: LimitReason;

  constructor(
    dependency: string,
    reason: LimitReason,
    /** When the limit expects to admit the call, in ms from the refusal. */
    readonly retryAfterMs: number,
    lastError: unknown = undefined,
    attempts = 0,
  ) {
    super(
      dependency,
      reason,
      lastError,
      attempts,
      `${dependency}: ${reason === 'rate_limited' ? 'the rate limit' : 'the concurrency limit'} refused the call (retry after ${retryAfterMs} ms)`,
    );
  }
}

/**
 * True for a {@link LimitedError}.
 * @example
 * if (isLimitedError(error)) console.log(error.reason, error.retryAfterMs);
 */
export const isLimitedError = marker<LimitedError>('isLimitedError');
