import { applyBreakerAction, isForcedAt, readDependencyState } from '@sluice/core';
import type { BreakerAdminStore } from '../roles/breakers';
import type { MemoryContext } from './context';

/** Operators' view and actions on a dependency, in memory. */
export function memoryBreakers(context: MemoryContext): BreakerAdminStore {
  return {
    async setBreaker(ref, action) {
      const snapshot = applyBreakerAction(context.state(ref), action, context.now());
      context.publishTransitions(ref, snapshot);
      // Re-entering the same state (a second trip, a new duration) is announced all the same.
      if (snapshot.transitions.length === 0) context.publishBreaker(ref, snapshot.record, snapshot.record.state);
      return snapshot;
    },

    async keepForcedListed(ref, breaker) {
      let forced = context.forced.get(ref.namespace);
      if (isForcedAt(breaker, context.now())) {
        if (!forced) context.forced.set(ref.namespace, (forced = new Map()));
        forced.set(ref.dependency, breaker.openUntil ?? Number.POSITIVE_INFINITY);
      } else {
        forced?.delete(ref.dependency);
        if (forced?.size === 0) context.forced.delete(ref.namespace);
      }
    },

    async readDependency(ref, policy) {
      const snapshot = readDependencyState(context.existing(ref), policy, context.now());
      context.publishTransitions(ref, snapshot.breaker);
      return snapshot;
    },
  };
}
