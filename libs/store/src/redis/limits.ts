import type { SluiceKeys } from '../keys';
import { takeOutcomeTtlMs } from '../request-outcomes';
import type { LimitStore } from '../roles/limits';
import { scriptOutcome } from './script-codes';
import type { ScriptRunner } from './script-runner';

/** Named rate limits and concurrency leases: take_rate_limit-2.lua, release_lease-1.lua, renew_lease-1.lua. */
export function redisLimits(scripts: ScriptRunner, keys: SluiceKeys): LimitStore {
  return {
    async takeRateLimit(ref, policy, cost, requestId) {
      const [code, remaining, retryAfterMs, resetMs] = await scripts.run(
        'take_rate_limit',
        keys.rateLimit(ref.namespace, ref.limit, ref.key),
        keys.rateLimitRequest(ref.namespace, ref.limit, ref.key, requestId),
        JSON.stringify({ rate: policy.rate, periodMs: policy.periodMs, burst: policy.burst }),
        cost,
        requestId ?? '',
        takeOutcomeTtlMs(policy.periodMs),
      );
      const allow = scriptOutcome('take_rate_limit', code, ['granted', 'rate_limited']) === 'granted';
      return { allow, limit: policy.burst, remaining, retryAfterMs, resetMs };
    },

    async releaseLease(ref, leaseId) {
      const leases = keys.dependency(ref.namespace, ref.dependency).leases;
      const [released, inUse] = await scripts.run('release_lease', leases, leaseId);
      return { released: released === 1, leasesInUse: inUse };
    },

    async renewLease(ref, leaseId, leaseMs) {
      const leases = keys.dependency(ref.namespace, ref.dependency).leases;
      const [expiresAt, inUse] = await scripts.run('renew_lease', leases, leaseId, leaseMs);
      return { expiresAt: expiresAt >= 0 ? expiresAt : null, leasesInUse: inUse };
    },
  };
}
