import { HISTORY_STEP_SECONDS, HISTORY_STEPS } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

const STEP_MS = HISTORY_STEP_SECONDS * 1000;
const POLICY: OutcomePolicy = {
  budgetWindowSeconds: 10,
  breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 10, failureRateThreshold: 0.5 },
  budgetRule: { mode: 'fixed', ratio: 0.2, minRetriesPerSecond: 1 },
};

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'history', dependency: `dep-${++sequence}` });

/**
 * A dependency's history (HistoryStore), written by recordOutcomes: the same on every store. On a
 * store with a fake clock, the steps and the span are driven through; on Redis the clock is real,
 * so the scenarios that need minutes to pass run on the fake clock only (redis-store.spec.ts
 * drives the Redis ring's ageing by writing its fields).
 */
export function describeHistoryConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`History conformance: ${label}`, () => {
    let subject: StoreUnderTest;
    beforeAll(async () => {
      subject = await open();
    });
    afterAll(() => subject.cleanup());

    it('has no history for a dependency never reported', async () => {
      expect(await subject.store.readHistory(freshRef())).toEqual([]);
    });

    it('sums a step’s outcomes and keeps the budget and breaker its last report left', async () => {
      const ref = freshRef();
      const { store } = subject;
      // On a real clock both reports may straddle a step's end: the step is read back as written.
      await store.recordOutcomes(ref, batch({ requests: 40, successes: 8, failures: 1, retries: 3 }), POLICY);
      const opened = await store.recordOutcomes(
        ref,
        batch({ requests: 10, successes: 1, failures: 9, slow: 2 }, 'pod-2'),
        POLICY,
      );
      expect(opened.breaker.record.state).toBe('open');
      const steps = await store.readHistory(ref);
      expect(steps.length).toBeGreaterThanOrEqual(1);
      expect(steps.length).toBeLessThanOrEqual(2);
      for (const step of steps) expect(step.at % STEP_MS).toBe(0);
      const last = steps[steps.length - 1];
      // limit = floor(0.2 × 50 + 1 × 10) = 20; a fixed budget's cap is its limit.
      expect(last.budget).toEqual({
        retries: 3,
        retriesSucceeded: 0,
        requests: 50,
        limit: 20,
        cap: 20,
        windowSeconds: 10,
      });
      expect(last.state).toBe('open');
      const totals = steps.reduce(
        (sum, step) => ({
          successes: sum.successes + step.successes,
          failures: sum.failures + step.failures,
          slow: sum.slow + step.slow,
        }),
        { successes: 0, failures: 0, slow: 0 },
      );
      expect(totals).toEqual({ successes: 9, failures: 10, slow: 2 });
    });

    it('keeps one step per 10 s for 15 minutes, oldest first, and forgets what is older (fake clock)', async () => {
      if (subject.redis) return; // minutes of a real clock: see redis-store.spec.ts
      const ref = freshRef();
      const { store } = subject;
      // Start on a step's first second, so each report below falls in a step of its own.
      await subject.pass(STEP_MS - (subject.now!() % STEP_MS));
      const first = subject.now!();
      for (let i = 0; i < HISTORY_STEPS + 5; i++) {
        await store.recordOutcomes(ref, batch({ requests: 10, successes: 10 - (i % 3), failures: i % 3 }), POLICY);
        await subject.pass(STEP_MS);
      }
      await subject.pass(-STEP_MS); // back into the last step written
      const steps = await store.readHistory(ref);
      expect(steps).toHaveLength(HISTORY_STEPS);
      expect(steps[0].at).toBe(first + 5 * STEP_MS);
      expect(steps.map((step) => step.at)).toEqual(steps.map((_, i) => first + (5 + i) * STEP_MS));
      expect(steps[0].failures).toBe(5 % 3);
      // Quiet for a minute: the steps before stay, nothing is made up for the quiet ones.
      await subject.pass(6 * STEP_MS);
      expect(await store.readHistory(ref)).toHaveLength(HISTORY_STEPS - 6);
      // Quiet for 15 minutes: all of it has aged out.
      await subject.pass(HISTORY_STEPS * STEP_MS);
      expect(await store.readHistory(ref)).toEqual([]);
    });

    it('writes a step over the step of the same slot 15 minutes before, not into it (fake clock)', async () => {
      if (subject.redis) return;
      const ref = freshRef();
      const { store } = subject;
      await store.recordOutcomes(ref, batch({ requests: 10, failures: 4 }), POLICY);
      await subject.pass(HISTORY_STEPS * STEP_MS);
      await store.recordOutcomes(ref, batch({ requests: 10, successes: 3 }), POLICY);
      const steps = await store.readHistory(ref);
      expect(steps).toHaveLength(1);
      expect(steps[0]).toMatchObject({ successes: 3, failures: 0 });
    });
  });
}
