/** POST /v1/{ns}/deps/{dep}/retry */

/** What failed, when the attempt got no status. */
export const FAILURE_KINDS = ['timeout', 'connection', 'other'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export interface RetryRequest {
  attempt: number;
  idempotent?: boolean;
  deadlineMs?: number;
  status?: number;
  error?: FailureKind;
  retryAfterMs?: number;
  requestId?: string;
}

export const RETRY_REASONS = [
  'granted',
  'budget_exhausted',
  'breaker_open',
  'deadline_exceeded',
  'max_attempts',
  'not_retriable',
  'not_idempotent',
] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

export interface BudgetView {
  /** Retries granted (or charged) in the window. */
  retries: number;
  /** Of those, the ones reported to have succeeded (`retriesSucceeded` in reports) in the window. */
  retriesSucceeded: number;
  requests: number;
  limit: number;
  /**
   * The most retries the window may hold: `floor(maxRatio × requests + minRetriesPerSecond ×
   * windowSeconds)` under an adaptive budget, the limit under a fixed one.
   */
  cap: number;
  windowSeconds: number;
}

export const BREAKER_STATES = ['closed', 'open', 'half_open', 'forced_open', 'forced_closed'] as const;
export type BreakerState = (typeof BREAKER_STATES)[number];

/** The breaker in a decision; `openUntil` and `reason` are present when it is open or forced. */
export interface BreakerSummary {
  state: BreakerState;
  /** open: when it half-opens; forced_*: when the forced state lapses (null: until reset). */
  openUntil?: number | null;
  /** The operator's reason for a forced state; null for an automatic open. */
  reason?: string | null;
}

export interface RetryDecision {
  allow: boolean;
  reason: RetryReason;
  delayMs: number;
  budget: BudgetView;
  breaker: BreakerSummary;
  shadow: boolean;
  /**
   * On a `budget_exhausted` or `breaker_open` denial only: the earliest time from now, ms, at which
   * the same ask could be granted if no new requests were reported. Ask again for this dependency
   * no sooner than the smaller of this and the next report; deny locally with the same reason meanwhile.
   */
  retryAfterMs?: number;
}
