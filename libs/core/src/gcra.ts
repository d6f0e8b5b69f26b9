import type { RateLimitPolicy } from '@sluice/protocol';

/** What a GCRA take decided, and the limit's state after it. */
export interface GcraDecision {
  allow: boolean;
  /** The burst: how many takes fit at once. */
  limit: number;
  /** Takes of cost 1 that would still be granted right now. */
  remaining: number;
  /** When a denied take would be granted (0 when allowed), ms. */
  retryAfterMs: number;
  /** Until the limit is back to a full burst, ms. */
  resetMs: number;
  /** The theoretical arrival time to store (epoch ms), unchanged when denied. */
  tat: number;
}

/**
 * The generic cell rate algorithm: one stored instant (the theoretical arrival time, TAT) per
 * limit and key, exact, with no window-edge bursts. Each take of `cost` moves the TAT by
 * cost × periodMs / rate; a take is allowed while the TAT stays within burst × interval of now.
 * The Lua twin is libs/store/src/redis/lua/includes/gcra.lua.
 */
export function gcraTake(policy: RateLimitPolicy, storedTat: number | null, now: number, cost: number): GcraDecision {
  const interval = policy.periodMs / policy.rate;
  const tolerance = interval * policy.burst;
  const tat = Math.max(storedTat ?? now, now);
  const next = tat + interval * cost;
  const allowAt = next - tolerance;
  if (now < allowAt - GCRA_EPSILON) {
    return {
      allow: false,
      limit: policy.burst,
      remaining: remainingAt(tolerance, tat - now, interval),
      retryAfterMs: Math.ceil(allowAt - now),
      resetMs: Math.ceil(tat - now),
      tat,
    };
  }
  return {
    allow: true,
    limit: policy.burst,
    remaining: remainingAt(tolerance, next - now, interval),
    retryAfterMs: 0,
    resetMs: Math.ceil(next - now),
    tat: next,
  };
}

/** Guards comparisons of fractional intervals (1000 / 3 ms) against rounding. */
const GCRA_EPSILON = 1e-6;

function remainingAt(tolerance: number, backlog: number, interval: number): number {
  return Math.max(0, Math.floor((tolerance - backlog) / interval + GCRA_EPSILON));
}
