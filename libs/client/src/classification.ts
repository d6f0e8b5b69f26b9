import { isRetriableFailure } from '@sluice/core';
import type { FailureKind } from '@sluice/protocol';
import { isAttemptTimeoutError, isHttpStatusError } from './errors';

/**
 * What an attempt's error says about the dependency, in HTTP terms: a `status` (a gRPC code maps to
 * its HTTP twin), or a kind of `error` when no answer came (`timeout`, `connection`, `other`), plus
 * the dependency's `Retry-After`.
 * @example
 * const failure: Failure = { status: 429, retryAfterMs: 1000 };
 */
export interface Failure {
  status?: number;
  error?: FailureKind;
  /** The dependency's Retry-After, in ms: a retry never waits less. */
  retryAfterMs?: number;
  /** The dependency already retried its own calls and asks not to be retried (`sluice-no-retry`). */
  retriedDownstream?: boolean;
}

/**
 * Describes an error as a {@link Failure}, or returns `undefined` to leave it to the next classifier.
 * @example
 * const classify: Classifier = (error) => (error instanceof MyQuotaError ? { status: 429, retryAfterMs: error.waitMs } : undefined);
 * sluice.dependency('quota-api', { classify });
 */
export type Classifier = (error: unknown) => Failure | undefined;

/** Node's and undici's codes for a connection that could not be made or broke. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'SLUICE_CONNECT_TIMEOUT',
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * gRPC status codes as HTTP statuses (the mapping of grpc-gateway): UNAVAILABLE is 503,
 * RESOURCE_EXHAUSTED 429, DEADLINE_EXCEEDED a timeout, INTERNAL and UNKNOWN 500, the rest 4xx.
 */
const GRPC_STATUSES: Record<number, number | 'timeout'> = {
  1: 499, // CANCELLED
  2: 500, // UNKNOWN
  3: 400, // INVALID_ARGUMENT
  4: 'timeout', // DEADLINE_EXCEEDED
  5: 404, // NOT_FOUND
  6: 409, // ALREADY_EXISTS
  7: 403, // PERMISSION_DENIED
  8: 429, // RESOURCE_EXHAUSTED
  9: 400, // FAILED_PRECONDITION
  10: 409, // ABORTED
  11: 400, // OUT_OF_RANGE
  12: 501, // UNIMPLEMENTED
  13: 500, // INTERNAL
  14: 503, // UNAVAILABLE
  15: 500, // DATA_LOSS
  16: 401, // UNAUTHENTICATED
};

/**
 * Classifies gRPC-style errors (`@grpc/grpc-js` `ServiceError`: a numeric `code` with `details`
 * or `metadata`). Not in the defaults: pass it in `classify`.
 * @example
 * const users = sluice.dependency('users-grpc', { classify: grpcClassifier, idempotent: true });
 * await users.execute(({ deadlineMs }) => client.getUser(request, { deadline: Date.now() + deadlineMs }));
 */
export const grpcClassifier: Classifier = (error) => {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, details, metadata } = error as { code?: unknown; details?: unknown; metadata?: unknown };
  if (typeof code !== 'number' || (details === undefined && metadata === undefined)) return undefined;
  if (code === 0) return undefined;
  const mapped = GRPC_STATUSES[code] ?? 500;
  return mapped === 'timeout' ? { error: 'timeout' } : { status: mapped };
};

/**
 * The built-in classifier: the SDK's own timeout and HTTP errors, Node and undici network error
 * codes (also as a `cause`), and any error with a numeric `status`/`statusCode` (or
 * `response.status`, as axios and most HTTP clients raise). Anything else is `other`.
 * @example
 * defaultClassifier(new HttpStatusError(response, 2000, false)); // { status: 503, retryAfterMs: 2000, … }
 */
export const defaultClassifier: Classifier = (error) => {
  if (isAttemptTimeoutError(error)) return { error: 'timeout' };
  if (isHttpStatusError(error)) {
    return { status: error.status, retryAfterMs: error.retryAfterMs, retriedDownstream: error.retriedDownstream };
  }
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 4; depth++) {
    const { code, name } = current as { code?: unknown; name?: unknown };
    if (typeof code === 'string') {
      if (CONNECTION_CODES.has(code)) return { error: 'connection' };
      if (TIMEOUT_CODES.has(code)) return { error: 'timeout' };
    }
    if (name === 'TimeoutError') return { error: 'timeout' };
    const status = statusOf(current);
    if (status !== undefined) return { status };
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
};

function statusOf(error: object): number | undefined {
  const { status, statusCode, response } = error as { status?: unknown; statusCode?: unknown; response?: unknown };
  for (const value of [status, statusCode, (response as { status?: unknown } | undefined)?.status]) {
    if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599) return value;
  }
  return undefined;
}

/**
 * Runs `classifiers` in order, then the default; an error nobody knows is `other`.
 * @example
 * classify(grpcError, [grpcClassifier]); // { status: 503 }
 */
export function classify(error: unknown, classifiers: readonly Classifier[]): Failure {
  for (const classifier of classifiers) {
    const failure = classifier(error);
    if (failure) return failure;
  }
  return defaultClassifier(error) ?? { error: 'other' };
}

/**
 * True when the failure is the dependency's (it counts against its breaker and may be retried):
 * timeouts, connection errors, unknown errors, 408, 429 and 5xx. Other 4xx are the caller's.
 * @example
 * isDependencyFailure({ status: 404 }); // false
 */
export function isDependencyFailure(failure: Failure): boolean {
  return isRetriableFailure(failure.status);
}

/** Statuses that say the request was not processed, so a retry under the same idempotency key is useful. */
const NOT_PROCESSED_STATUSES = new Set([408, 429, 503]);

/**
 * The retry rules that need no state. Retried: timeouts, connection errors, 408, 429 and 503 for a
 * call that is idempotent or carries an idempotency key; other 5xx only for an idempotent call (an
 * idempotency layer may replay a stored 500); never other 4xx (`not_retriable`); never a
 * non-idempotent call without a key (`not_idempotent`). Returns `null` when a retry may be asked for.
 * @example
 * retryDenial({ status: 500 }, false, true); // 'not_idempotent'
 * retryDenial({ status: 503 }, false, true); // null
 */
export function retryDenial(
  failure: Failure,
  idempotent: boolean,
  hasIdempotencyKey: boolean,
): 'not_retriable' | 'not_idempotent' | null {
  if (!isDependencyFailure(failure)) return 'not_retriable';
  if (idempotent) return null;
  if (!hasIdempotencyKey) return 'not_idempotent';
  return failure.status === undefined || NOT_PROCESSED_STATUSES.has(failure.status) ? null : 'not_idempotent';
}
