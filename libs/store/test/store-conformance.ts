import { LATENCY_BOUNDS_MS } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type RetryBudgetPolicy } from '@sluice/protocol';
import type { DependencyRef, OutcomeBatch, OutcomePolicy, Store, StoreEvent } from '../src';

/** What a store under test comes with: a way to let time pass, on its own clock. */
export interface StoreUnderTest {
  store: Store;
  /** Lets `ms` pass for the store: a fake clock moves, a real one is waited on. */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

const BUDGET: RetryBudgetPolicy = { ratio: 0.1, minRetriesPerSecond: 10, windowSeconds: 10, maxAttempts: 3 };
/** The default breaker with a threshold no test here reaches: these scenarios are about the budget. */
const WINDOWS: OutcomePolicy = {
  budgetWindowSeconds: 10,
  breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 1_000_000 },
};
const ONE_SECOND_WINDOWS: OutcomePolicy = {
  budgetWindowSeconds: 1,
  breaker: { ...WINDOWS.breaker, windowSeconds: 1 },
};
const READ = { budget: BUDGET, outcomeWindowSeconds: 10 };
const NO_OUTCOMES = { successes: 0, failures: 0, slow: 0 };

/** A batch from one reporter, without probe outcomes. */
export function batch(counts: Partial<Omit<OutcomeBatch, 'reporter' | 'probes'>>, reporter = 'pod-1'): OutcomeBatch {
  return { reporter, requests: 0, successes: 0, failures: 0, slow: 0, probes: [], ...counts };
}

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'conformance', dependency: `dep-${++sequence}` });

/**
 * One scenario suite for every Store: RedisStore (standalone and Cluster) and MemoryStore must
 * answer alike, so the embedded mode and the fleet mode cannot drift apart.
 */
export function describeStoreConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Store conformance: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    it('reads a dependency never seen as empty, with the floor as its limit', async () => {
      const snapshot = await store.readDependency(freshRef(), READ);
      expect(snapshot).toEqual({
        budget: { retries: 0, requests: 0, limit: 100, windowSeconds: 10 },
        outcomes: NO_OUTCOMES,
        latency: new Array(LATENCY_BOUNDS_MS.length + 1).fill(0),
        breaker: {
          record: { state: 'closed', since: null, openUntil: null, opens: 0, probeSuccesses: 0, reason: null },
          transitions: [],
        },
      });
    });

    it('deposits first attempts into the budget and outcomes into their window', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 600, successes: 550, failures: 40, slow: 7 }), WINDOWS);
      await store.recordOutcomes(ref, batch({ requests: 400, successes: 390, failures: 5, slow: 1 }), WINDOWS);
      expect(await store.readDependency(ref, READ)).toMatchObject({
        budget: { retries: 0, requests: 1000, limit: 200, windowSeconds: 10 },
        outcomes: { successes: 940, failures: 45, slow: 8 },
      });
    });

    it('grants retries up to the limit, then denies budget_exhausted without counting the denial', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 50 }), WINDOWS);
      const policy = { ...BUDGET, minRetriesPerSecond: 0.5 }; // limit floor(5 + 5) = 10
      const verdicts: string[] = [];
      for (let i = 0; i < 12; i++) {
        verdicts.push((await store.decideRetry(ref, { budget: policy, delayMs: 10 })).verdict);
      }
      expect(verdicts).toEqual([...Array(10).fill('granted'), 'budget_exhausted', 'budget_exhausted']);
      const last = await store.decideRetry(ref, { budget: policy, delayMs: 10 });
      expect(last).toMatchObject({
        verdict: 'budget_exhausted',
        budget: { retries: 10, requests: 50, limit: 10, windowSeconds: 10 },
      });
    });

    it('returns the budget after a grant, the retry included', async () => {
      const outcome = await store.decideRetry(freshRef(), { budget: BUDGET, delayMs: 0 });
      expect(outcome).toMatchObject({
        verdict: 'granted',
        budget: { retries: 1, requests: 0, limit: 100, windowSeconds: 10 },
        breaker: { record: { state: 'closed' }, transitions: [] },
      });
    });

    it('denies deadline_exceeded when the delay passes the deadline, and does not count it', async () => {
      const ref = freshRef();
      const denied = await store.decideRetry(ref, { budget: BUDGET, delayMs: 300, deadlineMs: 299 });
      expect(denied.verdict).toBe('deadline_exceeded');
      expect(denied.budget.retries).toBe(0);
      const onTheEdge = await store.decideRetry(ref, { budget: BUDGET, delayMs: 300, deadlineMs: 300 });
      expect(onTheEdge.verdict).toBe('granted');
    });

    it('computes the limit without binary-fraction drift (0.29 × 100 is 29)', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 100 }), WINDOWS);
      const policy = { ...BUDGET, ratio: 0.29, minRetriesPerSecond: 0 };
      const results = [];
      for (let i = 0; i < 30; i++) results.push(await store.decideRetry(ref, { budget: policy, delayMs: 0 }));
      expect(results.filter((r) => r.verdict === 'granted')).toHaveLength(29);
      expect(results[29].budget.limit).toBe(29);
    });

    it('grants exactly the limit under concurrent decisions', async () => {
      const ref = freshRef();
      const policy = { ...BUDGET, minRetriesPerSecond: 5 }; // limit 50
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, () => store.decideRetry(ref, { budget: policy, delayMs: 0 })),
      );
      expect(outcomes.filter((o) => o.verdict === 'granted')).toHaveLength(50);
      expect((await store.readDependency(ref, { ...READ, budget: policy })).budget.retries).toBe(50);
    });

    it('keeps dependencies apart', async () => {
      const a = freshRef();
      const b = freshRef();
      await store.recordOutcomes(a, batch({ requests: 10, successes: 1, failures: 2 }), WINDOWS);
      await store.decideRetry(a, { budget: BUDGET, delayMs: 0 });
      expect(await store.readDependency(b, READ)).toMatchObject({
        budget: { retries: 0, requests: 0, limit: 100, windowSeconds: 10 },
        outcomes: NO_OUTCOMES,
      });
    });

    it('forgets deposits, retries and outcomes once they age out of the window', async () => {
      const ref = freshRef();
      const oneSecond = { ...BUDGET, windowSeconds: 1 };
      await store.recordOutcomes(ref, batch({ requests: 500, successes: 3, failures: 4, slow: 1 }), ONE_SECOND_WINDOWS);
      await store.decideRetry(ref, { budget: oneSecond, delayMs: 0 });
      await subject.pass(1100);
      expect(await store.readDependency(ref, { budget: oneSecond, outcomeWindowSeconds: 1 })).toMatchObject({
        budget: { retries: 0, requests: 0, limit: 10, windowSeconds: 1 },
        outcomes: NO_OUTCOMES,
      });
    });

    it('keeps deciding after buckets holding zero counters age out', async () => {
      const ref = freshRef();
      const oneSecond = { ...BUDGET, windowSeconds: 1 };
      // A second with a retry and no deposit, and one with a deposit and no retry.
      expect((await store.decideRetry(ref, { budget: oneSecond, delayMs: 0 })).verdict).toBe('granted');
      await subject.pass(1100);
      await store.recordOutcomes(ref, batch({ requests: 20 }), ONE_SECOND_WINDOWS);
      await subject.pass(1100);
      const after = await store.decideRetry(ref, { budget: oneSecond, delayMs: 0 });
      expect(after).toMatchObject({
        verdict: 'granted',
        budget: { retries: 1, requests: 0, limit: 10, windowSeconds: 1 },
      });
    });

    it('caps the distinct dependencies of a namespace, and frees a place after the retention', async () => {
      const namespace = `cap-${++sequence}`;
      const registration = { cap: 2, retentionMs: 1000 };
      const register = (dependency: string) => store.registerDependency({ namespace, dependency }, registration);
      expect(await register('a')).toBe(true);
      expect(await register('b')).toBe(true);
      expect(await register('c')).toBe(false);
      expect(await register('a')).toBe(true);
      expect(await store.registerDependency({ namespace: `other-${sequence}`, dependency: 'c' }, registration)).toBe(
        true,
      );
      await subject.pass(1100);
      expect(await register('c')).toBe(true);
    });

    it('versions policy documents, writes them conditionally, and never reuses a version', async () => {
      const namespace = `policies-${++sequence}`;
      const ref = { kind: 'dep' as const, name: 'payments-api' };
      const events: StoreEvent[] = [];
      const stop = await store.subscribeNamespace(namespace, (event) => events.push(event));
      expect(await store.writePolicy(namespace, ref, { mode: 'shadow' })).toEqual({ outcome: 'written', version: 1 });
      expect(await store.writePolicy(namespace, ref, { mode: 'enforce' }, { ifAbsent: true })).toEqual({
        outcome: 'precondition_failed',
        version: 1,
      });
      expect(await store.writePolicy(namespace, ref, { mode: 'enforce' }, { ifVersion: 7 })).toEqual({
        outcome: 'precondition_failed',
        version: 1,
      });
      expect(await store.writePolicy(namespace, ref, { mode: 'enforce' }, { ifVersion: 1 })).toEqual({
        outcome: 'written',
        version: 2,
      });
      await store.writePolicy(namespace, { kind: 'default', name: '' }, { retryBudget: { ratio: 0.2 } });
      expect(await store.readPolicies(namespace)).toEqual(
        expect.arrayContaining([
          { kind: 'dep', name: 'payments-api', version: 2, document: { mode: 'enforce' } },
          { kind: 'default', name: '', version: 1, document: { retryBudget: { ratio: 0.2 } } },
        ]),
      );
      expect(await store.writePolicy(namespace, ref, null)).toEqual({ outcome: 'written', version: 3 });
      expect(await store.writePolicy(namespace, ref, null)).toEqual({ outcome: 'not_found' });
      expect((await store.readPolicies(namespace)).map((policy) => policy.kind)).toEqual(['default']);
      expect(await store.writePolicy(namespace, ref, { mode: 'shadow' }, { ifAbsent: true })).toEqual({
        outcome: 'written',
        version: 4,
      });
      const deadline = Date.now() + 2000;
      while (events.length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await stop();
      expect(events).toHaveLength(5);
      expect(events[0]).toEqual({ type: 'policy', kind: 'dep', name: 'payments-api' });
    });

    it('keeps the audit log in order, filtered by namespace and limited to the latest entries', async () => {
      const namespace = `audit-${++sequence}`;
      const other = `audit-other-${sequence}`;
      const record = (ns: string, action: string) => ({
        actor: 'ops',
        action,
        namespace: ns,
        target: 'pay',
        reason: null,
      });
      const first = await store.appendAudit({ ...record(namespace, 'trip'), reason: 'bad deploy' });
      await store.appendAudit(record(other, 'reset'));
      await store.appendAudit(record(namespace, 'reset'));
      await store.appendAudit(record(namespace, 'policy.put'));
      const mine = await store.readAudit({ namespace, limit: 10 });
      expect(mine.map((entry) => entry.action)).toEqual(['trip', 'reset', 'policy.put']);
      expect(mine[0]).toEqual({
        at: first,
        actor: 'ops',
        action: 'trip',
        namespace,
        target: 'pay',
        reason: 'bad deploy',
      });
      expect((await store.readAudit({ namespace, limit: 2 })).map((entry) => entry.action)).toEqual([
        'reset',
        'policy.put',
      ]);
      const everyone = await store.readAudit({ limit: 4 });
      expect(everyone.map((entry) => entry.namespace)).toEqual([namespace, other, namespace, namespace]);
    });

    it('answers a ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
