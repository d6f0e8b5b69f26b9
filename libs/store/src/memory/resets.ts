import { randomUUID } from 'node:crypto';
import { BreakerMachine, breakerSnapshot, clearBreakerWindow, commitBreaker, type BreakerRecord } from '@sluice/core';
import type { ForcedBreakerState, ResetStore } from '../roles/resets';
import type { MemoryContext } from './context';

/**
 * Whether re-asserting `forced` changes something true (twin of reassert_breaker-4.lua): not when
 * it has lapsed, nor when the breaker holds a forced state at least as recent, nor when it was
 * reset or lapsed (closed) since.
 */
function reasserts(record: BreakerRecord, forced: ForcedBreakerState, now: number): boolean {
  if (forced.openUntil !== null && forced.openUntil <= now) return false;
  const newer = record.since !== null && record.since >= forced.since;
  const forcedNow = record.state === 'forced_open' || record.state === 'forced_closed';
  return !(newer && (forcedNow || record.state === 'closed'));
}

/** The embedded store lives and dies with its process: one shard whose epoch never changes. */
export function memoryResets(context: MemoryContext): ResetStore {
  const epoch = randomUUID();
  return {
    async readStoreEpochs() {
      return [{ shard: '0', epoch, created: false }];
    },

    async reassertBreaker(ref, forced) {
      const now = context.now();
      const state = context.state(ref);
      const machine = new BreakerMachine(state.breaker).settle(now);
      if (!reasserts(machine.record, forced, now)) return { applied: false, snapshot: breakerSnapshot(machine) };
      const from = machine.record.state;
      state.breaker = { ...forced, opens: 0, probeSuccesses: 0 };
      clearBreakerWindow(state);
      const snapshot = commitBreaker(state, new BreakerMachine(state.breaker));
      // The transitions time made before it (settle), then the one it makes, as reassert_breaker-4.lua answers.
      const transitions = [...machine.transitions, ...(from === forced.state ? [] : [{ from, to: forced.state }])];
      context.publishTransitions(ref, { record: snapshot.record, transitions });
      return { applied: true, snapshot: { record: snapshot.record, transitions } };
    },
  };
}
