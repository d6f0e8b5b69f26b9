import type { BackoffPolicy } from '@sluice/protocol';

import type { RandomSource } from './random';

export interface BackoffInput {
  /** Which retry this is: 1 is the first retry. */
  attempt: number;
  /** The dependency's Retry-After in ms: the delay is never below it. */
  retryAfterMs?: number;
  /** The delay before the previous attempt, for decorrelated jitter. */
  previousDelayMs?: number;
}

/** Exponent cap so 2 ** n never overflows into Infinity. */
const MAX_EXPONENT = 30;

/**
 * The delay before a retry: exponential from `baseMs`, capped at `capMs`, with jitter.
 * - `none`: `min(cap, base × 2^(attempt-1))`.
 * - `full`: uniform in `[0, min(cap, base × 2^(attempt-1))]`.
 * - `decorrelated`: uniform in `[base, previous × 3]`, capped; without a previous delay the
 *   previous one is taken as `base × 3^(attempt-2)` (what the expected sequence gives).
 * Never below `retryAfterMs`, even past the cap: a server's Retry-After is not undercut.
 */
export function backoffDelay(policy: BackoffPolicy, input: BackoffInput, random: RandomSource = Math.random): number {
  const attempt = Math.max(1, Math.floor(input.attempt));
  const exponential = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt - 1, MAX_EXPONENT));
  let delay: number;
  switch (policy.jitter) {
    case 'none':
      delay = exponential;
      break;
    case 'full':
      delay = random() * exponential;
      break;
    case 'decorrelated': {
      const previous = Math.min(
        policy.capMs,
        input.previousDelayMs ?? policy.baseMs * 3 ** Math.min(Math.max(attempt - 2, 0), MAX_EXPONENT),
      );
      const upper = Math.max(policy.baseMs, previous * 3);
      delay = Math.min(policy.capMs, policy.baseMs + random() * (upper - policy.baseMs));
      break;
    }
  }
  return Math.max(Math.round(delay), Math.ceil(input.retryAfterMs ?? 0));
}
