/** What `Dependency.execute` takes per call, and what each attempt of it gets. */

/**
 * What one attempt of a call gets: its number, a signal that aborts at its timeout, at the deadline,
 * when the caller aborts or when it loses a hedge, what is left of the deadline, and the headers to
 * forward (`sluice-deadline-ms`, `sluice-attempt`, `Idempotency-Key`).
 * @example
 * await payments.execute(({ signal, headers }) => fetch(url, { signal, headers }));
 */
export interface AttemptContext {
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly signal: AbortSignal;
  /** What this attempt may take, in ms: the smaller of its timeout and the rest of the deadline. */
  readonly deadlineMs: number;
  /** Headers to send with this attempt. */
  readonly headers: Record<string, string>;
  /** True for a hedged (second, concurrent) attempt. */
  readonly hedge: boolean;
}

/**
 * Per-call options of `Dependency.execute`.
 * @example
 * await payments.execute(fn, { signal, idempotencyKey: order.id, deadlineMs: 1500 });
 */
export interface ExecuteOptions {
  /** Aborts the call (every attempt and any backoff); execute rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The operation is idempotent (default: the dependency's `idempotent` option). */
  idempotent?: boolean;
  /** An idempotency key: a non-idempotent call with a key may be retried on timeouts, connection errors, 408, 429 and 503. */
  idempotencyKey?: string;
  /** This call's deadline in ms (default: the dependency's `deadlineMs`), never past the request's own. */
  deadlineMs?: number;
  /**
   * What each attempt costs against the dependency's rate limit (default 1): an integer, at most the
   * limit's burst. Ignored by dependencies without a rate limit.
   */
  cost?: number;
}
