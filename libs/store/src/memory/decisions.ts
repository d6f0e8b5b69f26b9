import { admit, decideRetry, recordOutcomes } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { admitOutcomeTtlMs, retryOutcomeTtlMs } from '../request-outcomes';
import type { DecisionStore } from '../roles/decisions';
import type { MemoryContext } from './context';

/** The decision path in memory: the libs/core decisions over the dependency's state, then publish and keep. */
export function memoryDecisions(context: MemoryContext): Omit<DecisionStore, 'decideRetries'> {
  const { keys, kept } = context;
  return {
    async decideRetry(ref, request) {
      const now = context.now();
      const requestKey =
        request.requestId === undefined
          ? undefined
          : keys.dependencyRequests(ref.namespace, ref.dependency).retry(request.requestId);
      const repeat = requestKey === undefined ? undefined : kept.get(requestKey, now);
      const latencyWindowSeconds = request.latencyWindowSeconds ?? DEFAULT_DEPENDENCY_POLICY.breaker.windowSeconds;
      const outcome = decideRetry(
        context.state(ref),
        { ...request, latencyWindowSeconds },
        now,
        repeat?.kind === 'retry' ? repeat : undefined,
      );
      context.publishTransitions(ref, outcome.breaker);
      if (requestKey !== undefined && repeat?.kind !== 'retry' && outcome.verdict === 'granted') {
        const expiresAt = now + retryOutcomeTtlMs(request.budget.windowSeconds);
        kept.set(
          requestKey,
          { kind: 'retry', delayMs: outcome.delayMs, budget: { ...outcome.budget } },
          expiresAt,
          now,
        );
      }
      return outcome;
    },

    async recordOutcomes(ref, batch, policy) {
      const recorded = recordOutcomes(context.state(ref), batch, policy, context.now());
      context.publishTransitions(ref, recorded.breaker);
      return recorded;
    },

    async admit(ref, request) {
      const now = context.now();
      const requestKey =
        request.requestId === undefined
          ? undefined
          : keys.dependencyRequests(ref.namespace, ref.dependency).admit(request.requestId);
      const repeat = requestKey === undefined ? undefined : kept.get(requestKey, now);
      const outcome = admit(context.state(ref), request, now, repeat?.kind === 'admit' ? repeat : undefined);
      context.publishTransitions(ref, outcome.breaker);
      if (requestKey !== undefined && repeat?.kind !== 'admit' && outcome.verdict === 'granted') {
        const { probe, lease, leasesInUse } = outcome;
        const expiresAt = now + admitOutcomeTtlMs(request.concurrency?.leaseMs ?? 0, request.breaker.probeLeaseMs);
        kept.set(
          requestKey,
          {
            kind: 'admit',
            ...(probe ? { probe: { ...probe } } : {}),
            ...(lease ? { lease: { ...lease } } : {}),
            leasesInUse,
          },
          expiresAt,
          now,
        );
      }
      return outcome;
    },
  };
}
