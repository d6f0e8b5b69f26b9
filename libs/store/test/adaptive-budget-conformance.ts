import { DEFAULT_DEPENDENCY_POLICY, type RetryBudgetPolicy } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy, RetryBudgetOutcome, Store } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

/** 100 requests: limit floor(0.1 × 100) = 10, cap floor(0.3 × 100) = 30 (no floor). */
const ADAPTIVE: RetryBudgetPolicy = {
  mode: 'adaptive',
  ratio: 0.1,
  maxRatio: 0.3,
  minRetriesPerSecond: 0,
  windowSeconds: 10,
  maxAttempts: 3,
};
const FIXED: RetryBudgetPolicy = { ...ADAPTIVE, mode: 'fixed' };
const breaker = { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 1_000_000 };
const WINDOWS: OutcomePolicy = { budgetWindowSeconds: 10, breaker };

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'adaptive', dependency: `dep-${++sequence}` });

/** `count` retries asked one after another. */
async function ask(store: Store, ref: DependencyRef, budget: RetryBudgetPolicy, count: number) {
  const outcomes: RetryBudgetOutcome[] = [];
  for (let i = 0; i < count; i++) outcomes.push(await store.decideRetry(ref, { budget, delayMs: 0 }));
  return { verdicts: outcomes.map((outcome) => outcome.verdict), last: outcomes[outcomes.length - 1] };
}

const granted = (count: number) => Array<string>(count).fill('granted');

/** Waits (or moves the fake clock) to 20 ms past the start of the next second. */
async function toStartOfSecond(subject: StoreUnderTest): Promise<void> {
  const now = subject.now?.() ?? Date.now();
  await subject.pass(1000 - (now % 1000) + 20);
}

/**
 * A retryAfterMs `expected` ms from an ask made 20 ms into a second: exact on a fake clock; on a
 * real one, the asks took some of it.
 */
function expectRetryAfter(subject: StoreUnderTest, actual: number | null, expected: number): void {
  if (!subject.now) {
    expect(actual).toBeGreaterThan(expected - 500);
    expect(actual).toBeLessThanOrEqual(expected);
  } else expect(actual).toBe(expected);
}

/**
 * Adaptive budgets (reports' retriesSucceeded): grant while max(retries − retriesSucceeded, 0) <
 * limit and retries < cap; fixed budgets count every retry. The same for every Store.
 */
export function describeAdaptiveBudgetConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Adaptive budgets: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    it('gives back the grant of each retry that succeeded, and stops at the cap however many succeed', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 100 }), WINDOWS);
      const spent = await ask(store, ref, ADAPTIVE, 11);
      expect(spent.verdicts).toEqual([...granted(10), 'budget_exhausted']);
      // Without a floor only new requests could make room: the whole window.
      expect(spent.last.retryAfterMs).toBe(10_000);
      await store.recordOutcomes(ref, batch({ retriesSucceeded: 6 }), WINDOWS);
      const refunded = await ask(store, ref, ADAPTIVE, 7);
      expect(refunded.verdicts).toEqual([...granted(6), 'budget_exhausted']);
      expect(refunded.last.budget).toEqual({
        retries: 16,
        retriesSucceeded: 6,
        requests: 100,
        limit: 10,
        cap: 30,
        windowSeconds: 10,
      });
      await store.recordOutcomes(ref, batch({ retriesSucceeded: 100 }, 'pod-2'), WINDOWS);
      const capped = await ask(store, ref, ADAPTIVE, 15);
      expect(capped.verdicts).toEqual([...granted(14), 'budget_exhausted']);
      expect(capped.last.retryAfterMs).toBe(10_000);
      expect((await store.readDependency(ref, { budget: ADAPTIVE, outcomeWindowSeconds: 10 })).budget).toEqual({
        retries: 30,
        retriesSucceeded: 106,
        requests: 100,
        limit: 10,
        cap: 30,
        windowSeconds: 10,
      });
    });

    it('leaves a fixed budget as it was: every retry counts, and its cap is its limit', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 100 }), WINDOWS);
      expect((await ask(store, ref, FIXED, 11)).verdicts).toEqual([...granted(10), 'budget_exhausted']);
      await store.recordOutcomes(ref, batch({ retriesSucceeded: 6 }), WINDOWS);
      const after = await ask(store, ref, FIXED, 2);
      expect(after.verdicts).toEqual(['budget_exhausted', 'budget_exhausted']);
      expect(after.last.budget).toEqual({
        retries: 10,
        retriesSucceeded: 6,
        requests: 100,
        limit: 10,
        cap: 10,
        windowSeconds: 10,
      });
      expect(after.last.retryAfterMs).toBe(10_000);
    });

    it('never counts retries − retriesSucceeded below 0', async () => {
      const ref = freshRef();
      // floor(0.01 × 10) = 0: nothing fits, whatever succeeded (−5 would let one through).
      const budget = { ...ADAPTIVE, ratio: 0.01, maxRatio: 0.5 };
      await store.recordOutcomes(ref, batch({ requests: 10, retriesSucceeded: 5 }), WINDOWS);
      const denied = await store.decideRetry(ref, { budget, delayMs: 0 });
      expect(denied).toMatchObject({
        verdict: 'budget_exhausted',
        budget: { retries: 0, retriesSucceeded: 5, requests: 10, limit: 0, cap: 5 },
      });
    });

    it('ages both counters out of the window, and says when a denied ask could be granted under each condition', async () => {
      const ref = freshRef();
      // A 3 s window and a floor of 1 retry/s: limit floor(0.1 × requests + 3), cap floor(0.5 × requests + 3).
      const budget: RetryBudgetPolicy = { ...ADAPTIVE, maxRatio: 0.5, minRetriesPerSecond: 1, windowSeconds: 3 };
      const windows: OutcomePolicy = { budgetWindowSeconds: 3, breaker };
      const read = async () => (await store.readDependency(ref, { budget, outcomeWindowSeconds: 3 })).budget;
      await toStartOfSecond(subject);
      // Second c: the floor's 3 retries, then 10 that succeeded (some for retries no longer counted).
      const first = await ask(store, ref, budget, 4);
      expect(first.verdicts).toEqual([...granted(3), 'budget_exhausted']);
      await store.recordOutcomes(ref, batch({ retriesSucceeded: 10 }), windows);
      const atCap = await store.decideRetry(ref, { budget, delayMs: 0 });
      // 0 net, but 3 retries is the cap: room once second c leaves the window, at c + 3.
      expect(atCap).toMatchObject({
        verdict: 'budget_exhausted',
        budget: { retries: 3, retriesSucceeded: 10, requests: 0, limit: 3, cap: 3 },
      });
      expectRetryAfter(subject, atCap.retryAfterMs, 2980);
      // Second c + 1: 100 requests (limit 13, cap 53); 3 retries less 10 succeeded: 20 more fit.
      await subject.pass(1000);
      await store.recordOutcomes(ref, batch({ requests: 100 }), windows);
      const net = await ask(store, ref, budget, 21);
      expect(net.verdicts).toEqual([...granted(20), 'budget_exhausted']);
      expect(net.last.budget).toMatchObject({ retries: 23, retriesSucceeded: 10, limit: 13, cap: 53 });
      // When second c leaves (c + 3), its 10 successes go with its 3 retries: 20 net, still over;
      // only when c + 1 leaves (c + 4) is there room.
      expectRetryAfter(subject, net.last.retryAfterMs, 2980);
      await subject.pass(2000);
      expect(await read()).toEqual({
        retries: 20,
        retriesSucceeded: 0,
        requests: 100,
        limit: 13,
        cap: 53,
        windowSeconds: 3,
      });
      expect((await store.decideRetry(ref, { budget, delayMs: 0 })).verdict).toBe('budget_exhausted');
      await subject.pass(1000);
      expect(await read()).toEqual({
        retries: 0,
        retriesSucceeded: 0,
        requests: 0,
        limit: 3,
        cap: 3,
        windowSeconds: 3,
      });
      expect((await store.decideRetry(ref, { budget, delayMs: 0 })).verdict).toBe('granted');
    });
  });
}
