import { LATENCY_BOUNDS_MS, type BreakerRecord, type BreakerSnapshot, type BreakerTransition } from '@sluice/core';
import type { BreakerState } from '@sluice/protocol';
import type { SluiceKeys } from '../keys';
import type { BreakerAdminStore } from '../roles/breakers';
import { budgetFromReply, budgetModeArgs } from './budget-reply';
import type { ScriptRunner } from './script-runner';

/** Reads the breaker reply tail (breakerReply() in lua/includes/breaker.lua) starting at `offset`. */
export function breakerFromReply(reply: ReadonlyArray<string | number>, offset: number): BreakerSnapshot {
  const record: BreakerRecord = {
    state: reply[offset] as BreakerState,
    since: nullable(reply[offset + 1]),
    openUntil: nullable(reply[offset + 2]),
    reason: reply[offset + 3] === '' ? null : String(reply[offset + 3]),
    opens: Number(reply[offset + 4]),
    probeSuccesses: Number(reply[offset + 5]),
  };
  const transitions: BreakerTransition[] = [];
  for (let i = offset + 6; i + 1 < reply.length; i += 2) {
    transitions.push({ from: reply[i] as BreakerState, to: reply[i + 1] as BreakerState });
  }
  return { record, transitions };
}

/** A time the script answers as -1 when there is none. */
function nullable(value: string | number): number | null {
  return Number(value) < 0 ? null : Number(value);
}

/** Operators' view and actions on a dependency: set_breaker-4.lua and read_dependency-7.lua. */
export function redisBreakers(scripts: ScriptRunner, keys: SluiceKeys): BreakerAdminStore {
  return {
    async setBreaker(ref, action) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const reply = await scripts.run(
        'set_breaker',
        dependency.breaker,
        dependency.outcomes,
        dependency.reporters,
        dependency.probes,
        action.action,
        action.action === 'reset' ? '' : (action.durationMs ?? ''),
        action.action === 'reset' ? '' : action.reason,
        dependency.events,
        ref.dependency,
      );
      return breakerFromReply(reply, 0);
    },

    async keepForcedListed(ref, breaker) {
      const forced = breaker.state === 'forced_open' || breaker.state === 'forced_closed';
      await scripts.run(
        'keep_forced_listed',
        keys.namespace(ref.namespace).forced,
        ref.dependency,
        forced ? 1 : 0,
        breaker.openUntil ?? -1,
      );
    },

    async readDependency(ref, policy) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const { budget } = policy;
      const reply = await scripts.run(
        'read_dependency',
        dependency.budget,
        dependency.outcomes,
        dependency.breaker,
        dependency.latency,
        dependency.activeReporters,
        dependency.rate,
        dependency.leases,
        budget.ratio,
        budget.minRetriesPerSecond,
        budget.windowSeconds,
        policy.outcomeWindowSeconds,
        dependency.events,
        ref.dependency,
        policy.rateLimit ? JSON.stringify(policy.rateLimit) : '',
        ...budgetModeArgs(budget),
      );
      const [successes, failures, slow, reporters, leases, rateLeft] = reply.slice(5, 11).map(Number);
      const latencyEnd = 11 + LATENCY_BOUNDS_MS.length + 1;
      return {
        budget: budgetFromReply(reply, 0, budget.windowSeconds),
        outcomes: { successes, failures, slow },
        reporters,
        usage: { leases, rateRemaining: rateLeft < 0 ? null : rateLeft },
        latency: reply.slice(11, latencyEnd).map(Number),
        breaker: breakerFromReply(reply, latencyEnd),
      };
    },
  };
}
