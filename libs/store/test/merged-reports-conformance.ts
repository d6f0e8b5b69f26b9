import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

/** A breaker that opens at half the calls failing, once two reporters have seen failures. */
const QUORUM_OF_TWO: OutcomePolicy = {
  budgetWindowSeconds: 10,
  breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 10, failureRateThreshold: 0.5, minReporters: 2 },
};

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'merged', dependency: `dep-${++sequence}` });

/** A batch merged from several reports (the coordinator's report merger) counts every reporter in it. */
export function describeMergedReportsConformance(label: string, create: () => Promise<StoreUnderTest>): void {
  describe(`Merged reports: ${label}`, () => {
    let subject: StoreUnderTest;
    beforeAll(async () => {
      subject = await create();
    });
    afterAll(async () => {
      await subject.cleanup();
    });

    it('counts each reporter of a merged batch, and only the failing ones toward the quorum', async () => {
      const ref = freshRef();
      const oneFailing = batch({ requests: 20, successes: 5, failures: 15 }, 'pod-a');
      oneFailing.reporters = [
        { reporter: 'pod-a', failing: true },
        { reporter: 'pod-b', failing: false },
        { reporter: 'pod-c', failing: false },
      ];
      const first = await subject.store.recordOutcomes(ref, oneFailing, QUORUM_OF_TWO);
      expect(first.reporters).toBe(3);
      // Over the threshold, but one failing reporter is not the quorum of two.
      expect(first.breaker.record.state).toBe('closed');
      const twoFailing = batch({ requests: 20, successes: 5, failures: 15 }, 'pod-d');
      twoFailing.reporters = [
        { reporter: 'pod-d', failing: false },
        { reporter: 'pod-b', failing: true },
      ];
      const second = await subject.store.recordOutcomes(ref, twoFailing, QUORUM_OF_TWO);
      expect(second.reporters).toBe(4);
      expect(second.breaker.record.state).toBe('open');
    });
  });
}
