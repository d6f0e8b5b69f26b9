import type { RateLimitPolicy } from '@sluice/protocol';

/**
 * A GCRA cell's theoretical arrival time (TAT), kept exactly: whole epoch ms plus `units`
 * (0 ≤ units < rate) of 1 / `rate` ms, for the `rate` it was computed with. Intervals of
 * periodMs / rate ms are whole numbers of those units, so no take rounds.
 */
export interface GcraCell {
  ms: number;
  units: number;
  rate: number;
}

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
  /** The cell to store, unchanged (but clamped) when denied. */
  tat: GcraCell;
}

/**
 * The generic cell rate algorithm: one stored instant (the theoretical arrival time, TAT) per
 * limit and key, exact, with no window-edge bursts. Each take of `cost` moves the TAT by
 * cost × periodMs / rate; a take is allowed while the TAT stays within burst × interval of now.
 *
 * It is computed on the backlog (TAT − now) in units of 1 / rate ms, in integers: an interval is
 * periodMs units, the tolerance periodMs × burst units (exact while that stays below 2^53). A
 * stored TAT further ahead than the tolerance (left by a clock step back) counts as the tolerance.
 * The Lua twin is libs/store/src/redis/lua/includes/gcra.lua.
 */
export function gcraTake(policy: RateLimitPolicy, stored: GcraCell | null, now: number, cost: number): GcraDecision {
  const { rate, periodMs, burst } = policy;
  const tolerance = periodMs * burst;
  const backlog = gcraBacklog(policy, stored, now);
  const next = backlog + periodMs * cost;
  if (next > tolerance) {
    return {
      allow: false,
      limit: burst,
      remaining: Math.floor((tolerance - backlog) / periodMs),
      retryAfterMs: Math.ceil((next - tolerance) / rate),
      resetMs: Math.ceil(backlog / rate),
      tat: gcraCellAt(now, backlog, rate),
    };
  }
  return {
    allow: true,
    limit: burst,
    remaining: Math.floor((tolerance - next) / periodMs),
    retryAfterMs: 0,
    resetMs: Math.ceil(next / rate),
    tat: gcraCellAt(now, next, rate),
  };
}

/** Charges `cost` whatever the limit says, at most a full burst deep (a grant made elsewhere). */
export function gcraCharge(policy: RateLimitPolicy, stored: GcraCell | null, now: number, cost: number): GcraCell {
  const backlog = gcraBacklog(policy, stored, now) + policy.periodMs * cost;
  return gcraCellAt(now, Math.min(backlog, policy.periodMs * policy.burst), policy.rate);
}

/** The backlog (TAT − now) in units of 1 / rate ms: 0 when the TAT has passed, at most the tolerance. */
export function gcraBacklog(policy: RateLimitPolicy, stored: GcraCell | null, now: number): number {
  if (!stored) return 0;
  const units = stored.rate === policy.rate ? stored.units : Math.ceil((stored.units * policy.rate) / stored.rate);
  const backlog = (stored.ms - now) * policy.rate + units;
  return Math.min(Math.max(backlog, 0), policy.periodMs * policy.burst);
}

/** The cell `backlog` units after `now`. */
function gcraCellAt(now: number, backlog: number, rate: number): GcraCell {
  const whole = Math.floor(backlog / rate);
  return { ms: now + whole, units: backlog - whole * rate, rate };
}

/** When the cell's TAT has passed: the epoch ms from which it holds nothing. */
export function gcraCellEnd(cell: GcraCell): number {
  return cell.ms + (cell.units > 0 ? 1 : 0);
}
