import { MAX_REPORTERS } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy, Store } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'reporter-bounds', dependency: `dep-${++sequence}` });
/** A breaker no test here opens: these scenarios are about the reporter sets. */
const POLICY: OutcomePolicy = {
  budgetWindowSeconds: 60,
  breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, windowSeconds: 60, minimumCalls: 1_000_000 },
};

/** The reporter sets of a dependency stay within MAX_REPORTERS, the least recent going first, in every Store alike. */
export function describeReporterBoundsConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Reporter sets within bounds: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    it('holds at most MAX_REPORTERS reporters of a dependency, forgetting the least recent', async () => {
      const ref = freshRef();
      const report = (reporter: string) =>
        store.recordOutcomes(ref, batch({ requests: 1, failures: 1 }, reporter), POLICY);
      for (let start = 0; start < MAX_REPORTERS; start += 500) {
        await Promise.all(Array.from({ length: 500 }, (_, i) => report(`pod-${start + i}`)));
      }
      await subject.pass(5);
      expect((await report('one-more')).reporters).toBe(MAX_REPORTERS);
      await subject.pass(5);
      // A reporter already held is not one more; the newest is kept, the least recent went.
      expect((await report('one-more')).reporters).toBe(MAX_REPORTERS);
      await subject.pass(5);
      expect((await report('pod-0')).reporters).toBe(MAX_REPORTERS);
    }, 60_000);
  });
}
