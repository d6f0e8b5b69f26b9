import type { RetryReason } from '@sluice/protocol';
import { SluiceError, marker } from './sluice-error';

// A call Sluice did not retry (again), and why.

/**
 * Why a dependency's rate or concurrency limit refused a call (fleet-wide, or locally in fallback).
 * @example
 * if (isLimitedError(error) && error.reason === 'concurrency_limited') metrics.bulkheadFull.inc();
 */
export type LimitReason = 'rate_limited' | 'concurrency_limited';

/**
 * Why a call that failed in a retriable way was not retried (again):
 * - the coordinator's reasons: `budget_exhausted`, `breaker_open`, `deadline_exceeded`, `max_attempts`, `not_idempotent`;
 * - `upstream_retry`: this process is serving a request that is itself a retry, so retries are left to that caller;
 * - `downstream_retried`: the dependency says it already retried its own dependencies (`sluice-no-retry`);
 * - `coordinator_unavailable`: the coordinator is unreachable and the fallback is `fail-closed`, or it
 *   did not answer a decision in time before the fallback took over;
 * - `config_error`: the coordinator refuses this client's token (401/403, a {@link ConfigError}), so
 *   nothing the fleet must grant happens: no retry, no hedge, no call to a half-open or limited dependency;
 * - `rate_limited`, `concurrency_limited`: the dependency's limit refused the call ({@link LimitedError}).
 * @example
 * if (isGiveUpError(error) && error.reason === 'budget_exhausted') metrics.shed.inc();
 */
export type GiveUpReason =
  | Exclude<RetryReason, 'granted' | 'not_retriable'>
  | 'upstream_retry'
  | 'downstream_retried'
  | 'coordinator_unavailable'
  | 'config_error'
  | LimitReason;

/**
 * The call failed and Sluice did not retry it (again): `reason` says why, `lastError` (also `cause`)
 * is the last attempt's own error (undefined when no attempt was made), `attempts` how many went out.
 * @example
 * try {
 *   await payments.execute(({ signal }) => charge(order, signal), { idempotencyKey: order.id });
 * } catch (error) {
 *   if (isGiveUpError(error)) log.warn(`gave up: ${error.reason} after ${error.attempts}`, error.cause);
 * }
 */
export class GiveUpError extends SluiceError {
  /** Marker for {@link isGiveUpError}. */
  readonly isGiveUpError = true;

  constructor(
    /** The dependency the call was for. */
    readonly dependency: string,
    /** Why no further attempt was made. */
    readonly reason: GiveUpReason,
    /** The last attempt's error, also the error's `cause`; undefined when no attempt was made. */
    readonly lastError: unknown,
    /** How many attempts went out (hedges included). */
    readonly attempts: number,
    message = `${dependency}: gave up after ${attempts} attempt${attempts === 1 ? '' : 's'} (${reason})`,
  ) {
    super(message, lastError === undefined ? undefined : { cause: lastError });
  }
}

/**
 * True for a {@link GiveUpError} (also a {@link BreakerOpenError}, a {@link DeadlineExceededError} or a {@link LimitedError}).
 * @example
 * if (isGiveUpError(error)) console.log(error.reason, error.lastError);
 */
export const isGiveUpError = marker<GiveUpError>('isGiveUpError');
