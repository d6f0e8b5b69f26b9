import type { RetryDecision } from '@sluice/protocol';

/**
 * A coordinator's granted retry decision as the wire carries it, closed breaker, not in shadow
 * mode; a test overrides what it is about (the delay, the budget's figures).
 * @example
 * const grant = grantedDecision({ delayMs: ask.attempt });
 */
export function grantedDecision(overrides: Partial<RetryDecision> = {}): RetryDecision {
  return {
    allow: true,
    reason: 'granted',
    delayMs: 1,
    budget: { retries: 1, retriesSucceeded: 0, requests: 10, limit: 100, cap: 100, windowSeconds: 10 },
    breaker: { state: 'closed' },
    shadow: false,
    ...overrides,
  };
}
