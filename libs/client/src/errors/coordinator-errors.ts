import type { ErrorBody, ErrorDetail } from '@sluice/protocol';
import { SluiceError, marker } from './sluice-error';

// The coordinator did not answer, refused this client, or answered an error.

/**
 * The coordinator could not answer: unreachable, timed out, or a 5xx such as 503
 * `store_unavailable`. `status` is its HTTP status when it answered, `code` the API's error code
 * when its body had one, `retryAfterMs` its `Retry-After` when it sent one. A 503 `overloaded`
 * means the instance shed the request before doing any work ({@link overloaded}). The SDK never
 * lets it escape from `execute`: it switches to the local fallback instead; the low-level
 * {@link CoordinatorClient} throws it.
 * @example
 * sluice.onFallback(({ active, error }) => active && isCoordinatorUnavailableError(error) && log.warn(error.message));
 */
export class CoordinatorUnavailableError extends SluiceError {
  /** Marker for {@link isCoordinatorUnavailableError}. */
  readonly isCoordinatorUnavailableError = true;
  readonly status?: number;
  /** The API's error code, e.g. `store_unavailable` or `overloaded`, when the answer carried one. */
  readonly code?: string;
  readonly retryAfterMs?: number;

  constructor(
    message: string,
    options: { status?: number; code?: string; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.code = options.code;
    this.retryAfterMs = options.retryAfterMs;
  }

  /**
   * True for a 503 `overloaded`: the instance was past its capacity and shed the request before
   * doing any work, so nothing changed. It is no answer, not a sign that the coordinator is down:
   * another instance may be asked, and it does not count toward the switch to the fallback.
   * @example
   * if (isCoordinatorUnavailableError(error) && error.overloaded) metrics.shed.inc();
   */
  get overloaded(): boolean {
    return this.status === 503 && this.code === 'overloaded';
  }
}

/**
 * The coordinator refuses this client's token: 401 (missing or unknown token) or 403 (a token whose
 * role or namespaces do not cover the namespace). A configuration error, not an outage: the SDK
 * does not switch to its fallback for it. It emits {@link Sluice.onConfigError}, logs an error line
 * at most every 30 s, shows it in {@link Sluice.status}, and {@link Sluice.ready} rejects with it.
 * Meanwhile calls still go out once, but nothing the fleet must grant happens: a failure is not
 * retried, no hedge is sent, and a call to a half-open or limited dependency is refused, each
 * giving up with reason `config_error`. With `verify: true`, calls fail with this error instead.
 * `message` names the status and the coordinator's own message.
 * @example
 * try {
 *   await sluice.ready();
 * } catch (error) {
 *   if (isConfigError(error)) {
 *     console.error(`check SLUICE_TOKEN: ${error.message}`); // "the coordinator answered 401 unauthorized: unknown token"
 *     process.exit(1);
 *   }
 * }
 */
export class ConfigError extends SluiceError {
  /** Marker for {@link isConfigError}. */
  readonly isConfigError = true;

  constructor(
    /** 401 or 403. */
    readonly status: number,
    /** The API's error code: `unauthorized` or `forbidden`. */
    readonly code: string,
    /** The coordinator's own message, e.g. "unknown token". */
    readonly coordinatorMessage: string,
  ) {
    super(`the coordinator answered ${status} ${code}: ${coordinatorMessage}`);
  }
}

/**
 * The coordinator answered with an error status (4xx, or a 5xx other than 503). `code` is the
 * API's error code; `details` names the fields at fault.
 * @example
 * try {
 *   await client.ackDelivery('orders', 'not a valid id');
 * } catch (error) {
 *   if (isSluiceHttpError(error) && error.code === 'validation_failed') console.log(error.details);
 * }
 */
export class SluiceHttpError extends SluiceError {
  /** Marker for {@link isSluiceHttpError}. */
  readonly isSluiceHttpError = true;
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];

  constructor(status: number, body: Partial<ErrorBody> | undefined) {
    super(body?.message ?? `the coordinator answered ${status}`);
    this.status = status;
    this.code = body?.code ?? 'unknown';
    this.details = body?.details ?? [];
  }
}

/**
 * Completing or releasing an idempotency key failed because the token no longer holds it: its
 * lease expired and another request took it over (409 `lease_lost`). The work may have run twice.
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
  }
}

/**
 * True for a {@link CoordinatorUnavailableError}.
 * @example
 * if (isCoordinatorUnavailableError(error)) console.log(error.status);
 */
export const isCoordinatorUnavailableError = marker<CoordinatorUnavailableError>('isCoordinatorUnavailableError');

/**
 * True for a {@link ConfigError}.
 * @example
 * sluice.ready().catch((error) => { if (isConfigError(error)) process.exit(1); });
 */
export const isConfigError = marker<ConfigError>('isConfigError');

/**
 * True for a {@link SluiceHttpError} (including {@link LeaseLostError}).
 * @example
 * if (isSluiceHttpError(error) && error.status === 404) return undefined;
 */
export const isSluiceHttpError = marker<SluiceHttpError>('isSluiceHttpError');

/**
 * True for a {@link LeaseLostError}.
 * @example
 * if (isLeaseLostError(error)) metrics.leaseLost.inc();
 */
export const isLeaseLostError = marker<LeaseLostError>('isLeaseLostError');
