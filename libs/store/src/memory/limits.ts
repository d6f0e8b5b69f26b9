import { gcraCellEnd, gcraTake, releaseLease, renewLease, type GcraCell } from '@sluice/core';
import { takeOutcomeTtlMs } from '../request-outcomes';
import type { LimitStore } from '../roles/limits';
import type { MemoryContext } from './context';

/** Rate limit keys kept before spent ones are swept (as their Redis keys would have expired). */
const SWEEP_RATE_LIMITS_AT = 10_000;

/** Named rate limits (libs/core GCRA over a Map of theoretical arrival times) and concurrency leases. */
export function memoryLimits(context: MemoryContext): LimitStore {
  const { keys, kept } = context;
  /** Named rate limit key → theoretical arrival time. */
  const rateLimits = new Map<string, GcraCell>();
  return {
    async takeRateLimit(ref, policy, cost, requestId) {
      const key = keys.rateLimit(ref.namespace, ref.limit, ref.key);
      const now = context.now();
      const requestKey =
        requestId === undefined ? undefined : keys.rateLimitRequest(ref.namespace, ref.limit, ref.key, requestId);
      const repeat = requestKey === undefined ? undefined : kept.get(requestKey, now);
      if (repeat?.kind === 'take') {
        return {
          allow: true,
          limit: policy.burst,
          remaining: repeat.remaining,
          retryAfterMs: 0,
          resetMs: repeat.resetMs,
        };
      }
      const decision = gcraTake(policy, rateLimits.get(key) ?? null, now, cost);
      // A denial keeps the TAT, cut to a full burst if a clock step back left it further.
      rateLimits.set(key, decision.tat);
      if (rateLimits.size >= SWEEP_RATE_LIMITS_AT) {
        for (const [limitKey, tat] of rateLimits) if (gcraCellEnd(tat) <= now) rateLimits.delete(limitKey);
      }
      const { allow, limit, remaining, retryAfterMs, resetMs } = decision;
      if (allow && requestKey !== undefined) {
        kept.set(requestKey, { kind: 'take', remaining, resetMs }, now + takeOutcomeTtlMs(policy.periodMs), now);
      }
      return { allow, limit, remaining, retryAfterMs, resetMs };
    },

    async releaseLease(ref, leaseId) {
      const state = context.existing(ref);
      return state ? releaseLease(state, leaseId, context.now()) : { released: false, leasesInUse: 0 };
    },

    async renewLease(ref, leaseId, leaseMs) {
      const state = context.existing(ref);
      return state ? renewLease(state, leaseId, leaseMs, context.now()) : { expiresAt: null, leasesInUse: 0 };
    },
  };
}
