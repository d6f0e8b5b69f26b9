/** POST /v1/{ns}/deps/{dep}/retry */

export type FailureKind = 'timeout' | 'connection' | 'other';

export interface RetryRequest {
  /** Which retry this is: 1 is the first retry. */
  attempt: number;
  idempotent?: boolean;
  deadlineMs?: number;
  status?: number;
  error?: FailureKind;
  retryAfterMs?: number;
  /** Caller-chosen: asking again with it answers the first decision and counts no second retry. */
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
  retries: number;
  requests: number;
  limit: number;
  windowSeconds: number;
}

export type BreakerState = 'closed' | 'open' | 'half_open' | 'forced_open' | 'forced_closed';

export interface BreakerSummary {
  state: BreakerState;
}

export interface RetryDecision {
  allow: boolean;
  reason: RetryReason;
  delayMs: number;
  budget: BudgetView;
  breaker: BreakerSummary;
  shadow: boolean;
}
