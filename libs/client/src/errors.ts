import type { ErrorBody, ErrorDetail } from '@sluice/protocol';

/**
 * The coordinator answered with an error status (4xx, or a 5xx other than 503). `code` is the
 * API's error code; `details` names the fields at fault.
 *
 * @example
 * try {
 *   await client.ackDelivery('orders', 'not a valid id');
 * } catch (error) {
 *   if (isSluiceHttpError(error) && error.code === 'validation_failed') console.log(error.details);
 * }
 */
export class SluiceHttpError extends Error {
  /** Marker for {@link isSluiceHttpError}: survives two copies of this package. */
  readonly isSluiceHttpError = true;
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];

  constructor(status: number, body: Partial<ErrorBody> | undefined) {
    super(body?.message ?? `the coordinator answered ${status}`);
    this.name = 'SluiceHttpError';
    this.status = status;
    this.code = body?.code ?? 'unknown';
    this.details = body?.details ?? [];
  }
}

/**
 * Completing or releasing an idempotency key failed because the token no longer holds it: its
 * lease expired and another request took it over (409 `lease_lost`). The work may have run twice.
 *
 * @example
 * try {
 *   await client.completeIdempotencyKey(key, token, response);
 * } catch (error) {
 *   if (isLeaseLostError(error)) logger.warn(`${key}: another request took over`);
 *   else throw error;
 * }
 */
export class LeaseLostError extends SluiceHttpError {
  /** Marker for {@link isLeaseLostError}. */
  readonly isLeaseLostError = true;

  constructor(body: Partial<ErrorBody> | undefined) {
    super(409, body);
    this.name = 'LeaseLostError';
  }
}

/**
 * The coordinator could not be reached, did not answer within the client's timeout, or answered
 * 503 (its store is unavailable). `retryAfterMs` is its `Retry-After`, when it sent one.
 *
 * @example
 * try {
 *   await client.recordDeliveryAttempt('orders', { messageId });
 * } catch (error) {
 *   if (isCoordinatorUnavailableError(error)) requeueLater(error.retryAfterMs ?? 1000);
 *   else throw error;
 * }
 */
export class CoordinatorUnavailableError extends Error {
  /** Marker for {@link isCoordinatorUnavailableError}. */
  readonly isCoordinatorUnavailableError = true;
  readonly retryAfterMs?: number;

  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, { cause: options.cause });
    this.name = 'CoordinatorUnavailableError';
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * True for a {@link SluiceHttpError} (including {@link LeaseLostError}).
 *
 * @example
 * if (isSluiceHttpError(error) && error.status === 404) return undefined;
 */
export function isSluiceHttpError(error: unknown): error is SluiceHttpError {
  return hasMarker(error, 'isSluiceHttpError');
}

/**
 * True for a {@link LeaseLostError}.
 *
 * @example
 * if (isLeaseLostError(error)) metrics.leaseLost.inc();
 */
export function isLeaseLostError(error: unknown): error is LeaseLostError {
  return hasMarker(error, 'isLeaseLostError');
}

/**
 * True for a {@link CoordinatorUnavailableError}.
 *
 * @example
 * if (isCoordinatorUnavailableError(error)) return fallback();
 */
export function isCoordinatorUnavailableError(error: unknown): error is CoordinatorUnavailableError {
  return hasMarker(error, 'isCoordinatorUnavailableError');
}

function hasMarker(error: unknown, marker: string): boolean {
  return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[marker] === true;
}
