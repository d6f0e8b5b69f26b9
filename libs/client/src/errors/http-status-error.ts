import { SluiceError, marker } from './sluice-error';

// A dependency answered with a status worth retrying.

/**
 * An HTTP response whose status is a failure worth retrying (408, 429, 5xx), as `sluice.fetch`
 * raises it. `response` is readable (its body was buffered); `retryAfterMs` is its parsed `Retry-After`.
 * @example
 * if (isGiveUpError(error) && isHttpStatusError(error.lastError)) console.log(await error.lastError.response.text());
 */
export class HttpStatusError extends SluiceError {
  /** Marker for {@link isHttpStatusError}. */
  readonly isHttpStatusError = true;

  constructor(
    /** The response, with its body buffered. */
    readonly response: Response,
    /** The response's `Retry-After`, in ms, when it had one. */
    readonly retryAfterMs: number | undefined,
    /** True when the response says the service already retried downstream (`sluice-no-retry`). */
    readonly retriedDownstream: boolean,
  ) {
    super(`the dependency answered ${response.status}`);
  }

  /** The response's status. */
  get status(): number {
    return this.response.status;
  }
}

/**
 * True for an {@link HttpStatusError}.
 * @example
 * if (isHttpStatusError(error)) console.log(error.status);
 */
export const isHttpStatusError = marker<HttpStatusError>('isHttpStatusError');
