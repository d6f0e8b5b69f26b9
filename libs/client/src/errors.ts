import type { BreakerState, ErrorBody, ErrorDetail, RetryReason } from '@sluice/protocol';

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
 * The base of every error the SDK raises itself.
 * @example
 * try { await payments.execute(call); } catch (error) { if (isSluiceError(error)) log.warn(error.message); }
 */
export class SluiceError extends Error {
  /** Marker for {@link isSluiceError}: survives duplicated copies of the package, unlike `instanceof`. */
  readonly isSluiceError = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

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
 * What the SDK knows of a breaker that refused a call: its state, the operator's reason for a
 * forced state, and when it may let calls through again.
 * @example
 * const facts: BreakerFacts = { state: 'forced_open', operatorReason: 'bad deploy', openUntil: null, retryAfterMs: null };
 */
export interface BreakerFacts {
  /** The breaker state that refused the call. */
  state: BreakerState;
  /** The operator's reason, when an operator forced the state; null otherwise or when unknown. */
  operatorReason: string | null;
  /**
   * When the breaker may let calls through (epoch ms): `open` half-opens then, a forced state
   * lapses then. Null when unknown, or for a forced state held until an operator resets it.
   */
  openUntil: number | null;
  /** In how many ms from the refusal the same call could go through; null when unknown or held until reset. */
  retryAfterMs: number | null;
}

/**
 * The dependency's breaker is open (fleet-wide, or locally in fallback): the call was refused
 * without being sent, or a retry was refused. It carries what the fleet knows of the breaker:
 * `state`, the operator's reason when one forced it open (`operatorReason`; `reason` stays the
 * give-up reason, `breaker_open`, like every {@link GiveUpError}'s), `openUntil` and `retryAfterMs`.
 * @example
 * try {
 *   await payments.execute(call);
 * } catch (error) {
 *   if (!isBreakerOpenError(error)) throw error;
 *   if (error.state === 'forced_open') log.warn(`payments held open by an operator: ${error.operatorReason}`);
 *   if (error.retryAfterMs !== null) reply.header('retry-after', Math.ceil(error.retryAfterMs / 1000));
 *   return cachedAnswer();
 * }
 */
export class BreakerOpenError extends GiveUpError implements BreakerFacts {
  /** Marker for {@link isBreakerOpenError}. */
  readonly isBreakerOpenError = true;
  /** The breaker state that refused the call. */
  readonly state: BreakerState;
  /** The operator's reason for a forced state (e.g. "bad deploy"); null for an automatic open, or when unknown. */
  readonly operatorReason: string | null;
  /** When the breaker may let calls through again (epoch ms); null when unknown or held until reset. */
  readonly openUntil: number | null;
  /** Ms from the refusal until the breaker may let the call through; null when unknown or held until reset. */
  readonly retryAfterMs: number | null;

  constructor(dependency: string, breaker: BreakerState | BreakerFacts, lastError: unknown = undefined, attempts = 0) {
    const facts = typeof breaker === 'string' ? unknownFacts(breaker) : breaker;
    super(dependency, 'breaker_open', lastError, attempts, breakerMessage(dependency, facts));
    this.state = facts.state;
    this.operatorReason = facts.operatorReason;
    this.openUntil = facts.openUntil;
    this.retryAfterMs = facts.retryAfterMs;
  }
}

function unknownFacts(state: BreakerState): BreakerFacts {
  return { state, operatorReason: null, openUntil: null, retryAfterMs: null };
}

/** "payments-api: the circuit breaker is forced_open (bad deploy), for 30000 ms more" */
function breakerMessage(dependency: string, facts: BreakerFacts): string {
  const why = facts.operatorReason ? ` (${facts.operatorReason})` : '';
  const until = facts.retryAfterMs === null ? '' : `, for ${facts.retryAfterMs} ms more`;
  return `${dependency}: the circuit breaker is ${facts.state}${why}${until}`;
}

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

const marker =
  <T>(property: string) =>
  (error: unknown): error is T =>
    typeof error === 'object' && error !== null && (error as Record<string, unknown>)[property] === true;

/**
 * True for any error the SDK raised itself.
 * @example
 * if (isSluiceError(error)) log.warn(error.message);
 */
export const isSluiceError = marker<SluiceError>('isSluiceError');
/**
 * True for a {@link GiveUpError} (also a {@link BreakerOpenError}, a {@link DeadlineExceededError} or a {@link LimitedError}).
 * @example
 * if (isGiveUpError(error)) console.log(error.reason, error.lastError);
 */
export const isGiveUpError = marker<GiveUpError>('isGiveUpError');
/**
 * True for a {@link BreakerOpenError}.
 * @example
 * if (isBreakerOpenError(error)) return fallbackAnswer();
 */
export const isBreakerOpenError = marker<BreakerOpenError>('isBreakerOpenError');
/**
 * True for a {@link DeadlineExceededError}.
 * @example
 * if (isDeadlineExceededError(error)) reply.code(504).send();
 */
export const isDeadlineExceededError = marker<DeadlineExceededError>('isDeadlineExceededError');
/**
 * True for a {@link LimitedError}.
 * @example
 * if (isLimitedError(error)) console.log(error.reason, error.retryAfterMs);
 */
export const isLimitedError = marker<LimitedError>('isLimitedError');
/**
 * True for an {@link AttemptTimeoutError}.
 * @example
 * if (isAttemptTimeoutError(error)) metrics.timeouts.inc();
 */
export const isAttemptTimeoutError = marker<AttemptTimeoutError>('isAttemptTimeoutError');
/**
 * True for an {@link HttpStatusError}.
 * @example
 * if (isHttpStatusError(error)) console.log(error.status);
 */
export const isHttpStatusError = marker<HttpStatusError>('isHttpStatusError');
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
