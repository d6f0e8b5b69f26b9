import type { FailureKind, RetryReason } from '@sluice/protocol';

export interface RetryAttempt {
  /** Which retry this would be: 1 is the first retry. */
  attempt: number;
  idempotent: boolean;
  status?: number;
  error?: FailureKind;
}

/** Statuses that say "try again" even for a call that reached the server. */
const RETRIABLE_STATUSES = new Set([408, 429]);

/** True when the failure is of a kind worth retrying at all: never a 4xx other than 408 and 429. */
export function isRetriableFailure(status: number | undefined): boolean {
  if (status === undefined) return true;
  if (RETRIABLE_STATUSES.has(status)) return true;
  return status >= 500;
}

/**
 * The decisions that need no state: a retry that is not retriable, not idempotent or past
 * `maxAttempts` is denied before the budget is touched. Returns `null` when the retry may go on
 * to the budget.
 */
export function preBudgetDenial(attempt: RetryAttempt, maxAttempts: number): RetryReason | null {
  if (!isRetriableFailure(attempt.status)) return 'not_retriable';
  if (!attempt.idempotent) return 'not_idempotent';
  if (attempt.attempt + 1 > maxAttempts) return 'max_attempts';
  return null;
}
