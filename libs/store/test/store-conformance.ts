import { LATENCY_BOUNDS_MS } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type RetryBudgetPolicy } from '@sluice/protocol';
import { randomBytes } from 'node:crypto';
import { retryOutcomeTtlMs } from '../src';
import type {
  DeadLetterRetention,
  DeliveryAttemptRecord,
  DependencyRef,
  IdempotencyClaim,
  IdempotencyRef,
  OutcomeBatch,
  OutcomePolicy,
  QueueRef,
  SluiceKeys,
  Store,
  StoreEvent,
} from '../src';

/** What a store under test comes with: a way to let time pass, on its own clock. */
export interface StoreUnderTest {
  store: Store;
  /** Lets `ms` pass for the store: a fake clock moves, a real one is waited on. */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
  /** The store's clock, when it is not the machine's (a fake clock). */
  now?(): number;
  /** A store with Redis keys: its key names and their PTTL. Without it, time is a fake clock. */
  redis?: { keys: SluiceKeys; pttl(key: string): Promise<number> };
}

/**
 * A first outcome kept under a caller-chosen id lives at most `ttlMs`: on Redis its key's PTTL is
 * positive and within it; on a fake clock, once `ttlMs` has passed, `forgotten()` says the id is
 * decided anew.
 */
export async function expectKeptAtMost(
  subject: StoreUnderTest,
  key: (keys: SluiceKeys) => string,
  ttlMs: number,
  forgotten: () => Promise<boolean>,
): Promise<void> {
  if (subject.redis) {
    const pttl = await subject.redis.pttl(key(subject.redis.keys));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(ttlMs);
  } else {
    await subject.pass(ttlMs);
    expect(await forgotten()).toBe(true);
  }
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
const freshKey = (): IdempotencyRef => ({ namespace: 'conformance', key: `Order:${++sequence}.v1_x-y` });
const freshQueue = (): QueueRef => ({ namespace: 'conformance', queue: `queue-${++sequence}` });
const token = (): string => randomBytes(16).toString('base64url');
const claimOf = (fields: Partial<IdempotencyClaim> = {}): IdempotencyClaim => ({
  fingerprint: 'sha256:request-a',
  token: token(),
  leaseMs: 30_000,
  retentionMs: 86_400_000,
  ...fields,
});
/** A stored response with what byte-for-byte replay must keep: unicode, escapes, a NUL, CRLF. */
const RESPONSE = JSON.stringify({
  status: 201,
  headers: { 'content-type': 'application/json', 'x-order': ['a', 'b'] },
  body: '{"id":"ord_1","note":"caf\u00e9 ☕ \u0000\r\n"}',
  bodyEncoding: 'utf8',
});
const DEAD_LETTERS: DeadLetterRetention = { retentionMs: 14 * 86_400_000, maxLength: 10_000 };
const attemptOf = (messageId: string, fields: Partial<DeliveryAttemptRecord> = {}): DeliveryAttemptRecord => ({
  messageId,
  error: 'boom',
  payload: '{"order":42,"items":["a","b"],"note":"ü"}',
  maxAttempts: 3,
  attemptRetentionMs: 86_400_000,
  deadLetters: DEAD_LETTERS,
  ...fields,
});

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
        budget: { retries: 0, retriesSucceeded: 0, requests: 0, limit: 100, cap: 100, windowSeconds: 10 },
        outcomes: NO_OUTCOMES,
        reporters: 0,
        usage: { leases: 0, rateRemaining: null },
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

    it('charges the retries a reporter made on its own grant to the budget', async () => {
      const ref = freshRef();
      await store.recordOutcomes(ref, batch({ requests: 100, retries: 108 }), WINDOWS);
      // floor(0.1 × 100 + 10 × 10) = 110, of which 108 are spent: two left.
      const verdicts = [];
      for (let i = 0; i < 3; i++) verdicts.push((await store.decideRetry(ref, { budget: BUDGET, delayMs: 0 })).verdict);
      expect(verdicts).toEqual(['granted', 'granted', 'budget_exhausted']);
      expect(await store.readDependency(ref, READ)).toMatchObject({
        budget: { retries: 110, requests: 100, limit: 110 },
      });
      // Retries alone, with no deposit, are charged too.
      await store.recordOutcomes(ref, batch({ retries: 3 }, 'pod-2'), WINDOWS);
      expect(await store.readDependency(ref, READ)).toMatchObject({ budget: { retries: 113, requests: 100 } });
    });

    it('counts the distinct reporters of the budget window, and forgets one that stopped reporting', async () => {
      const ref = freshRef();
      const report = async (reporter: string) =>
        (await store.recordOutcomes(ref, batch({ requests: 1 }, reporter), ONE_SECOND_WINDOWS)).reporters;
      expect(await report('pod-a')).toBe(1);
      expect(await report('pod-b')).toBe(2);
      expect(await report('pod-a')).toBe(2);
      expect(await report('pod-c')).toBe(3);
      // An empty batch still says the reporter is there.
      expect((await store.recordOutcomes(ref, batch({}, 'pod-d'), ONE_SECOND_WINDOWS)).reporters).toBe(4);
      // A read says the same, without reporting.
      const readOneSecond = { budget: { ...BUDGET, windowSeconds: 1 }, outcomeWindowSeconds: 1 };
      expect((await store.readDependency(ref, readOneSecond)).reporters).toBe(4);
      // Waited past the one-second window (a lower bound only: however long it takes, they are out of it).
      await subject.pass(1100);
      expect((await store.readDependency(ref, readOneSecond)).reporters).toBe(0);
      expect(await report('pod-a')).toBe(1);
      expect((await store.readDependency(ref, readOneSecond)).reporters).toBe(1);
      // pod-a reported a moment ago, inside the window; pod-b, pod-c and pod-d before it.
      expect(await report('pod-e')).toBe(2);
      expect(await report('pod-b')).toBe(3);
      // Other dependencies keep their own count.
      expect((await store.recordOutcomes(freshRef(), batch({}, 'pod-a'), ONE_SECOND_WINDOWS)).reporters).toBe(1);
    });

    it('caps the distinct dependencies of a namespace, and frees a place after the retention', async () => {
      const namespace = `cap-${++sequence}`;
      const registration = { cap: 2, retentionMs: 1000 };
      const register = (dependency: string) => store.registerDependency({ namespace, dependency }, registration);
      expect(await register('a')).toBe('uncalled');
      expect(await register('b')).toBe('uncalled');
      expect(await register('c')).toBe('refused');
      expect(await register('a')).toBe('called');
      expect(await store.countDependencies(namespace, registration.retentionMs)).toBe(2);
      expect(await store.registerDependency({ namespace: `other-${sequence}`, dependency: 'c' }, registration)).toBe(
        'uncalled',
      );
      await subject.pass(1100);
      expect(await store.countDependencies(namespace, registration.retentionMs)).toBe(0);
      expect(await register('c')).toBe('uncalled');
    });

    it('tells whether a caller used a dependency: an operator\u2019s use holds a place but makes it no better known', async () => {
      const namespace = `callers-${++sequence}`;
      const registration = { cap: 2, retentionMs: 1000 };
      const operator = { ...registration, by: 'operator' as const };
      const register = (dependency: string, terms: typeof operator | typeof registration) =>
        store.registerDependency({ namespace, dependency }, terms);
      expect(await register('typo', operator)).toBe('uncalled');
      expect(await register('typo', operator)).toBe('uncalled');
      expect(await register('used', operator)).toBe('uncalled');
      expect(await register('third', registration)).toBe('refused');
      expect(await register('used', registration)).toBe('uncalled');
      expect(await register('used', operator)).toBe('called');
      expect(await store.listDependencies(namespace, registration.retentionMs)).toEqual(['typo', 'used']);
      await subject.pass(1100);
      expect(await register('used', operator)).toBe('uncalled');
    });

    it('caps the distinct namespaces, lists them, and frees a place after the retention', async () => {
      const registration = { cap: 2, retentionMs: 1000 };
      const tag = ++sequence;
      const register = (namespace: string) => store.registerNamespace(`${namespace}-${tag}`, registration);
      expect(await register('a')).toBe(true);
      expect(await register('b')).toBe(true);
      expect(await register('c')).toBe(false);
      expect(await register('a')).toBe(true);
      expect(await store.listNamespaces(registration.retentionMs)).toEqual([`a-${tag}`, `b-${tag}`]);
      await subject.pass(1100);
      expect(await store.listNamespaces(registration.retentionMs)).toEqual([]);
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
        durationMs: null,
        endsAt: null,
      });
      expect((await store.readAudit({ namespace, limit: 2 })).map((entry) => entry.action)).toEqual([
        'reset',
        'policy.put',
      ]);
      const everyone = await store.readAudit({ limit: 4 });
      expect(everyone.map((entry) => entry.namespace)).toEqual([namespace, other, namespace, namespace]);
    });

    it('keeps the duration of a forced state in its audit entry, and when it ends', async () => {
      const namespace = `audit-${++sequence}`;
      const at = await store.appendAudit({
        actor: 'ops',
        action: 'breaker.trip',
        namespace,
        target: 'pay',
        reason: 'bad deploy',
        durationMs: 600_000,
        endsAt: 1_800_000_600_000,
      });
      await store.appendAudit({ actor: 'ops', action: 'breaker.reset', namespace, target: 'pay', reason: null });
      expect(await store.readAudit({ namespace, limit: 10 })).toEqual([
        expect.objectContaining({ at, action: 'breaker.trip', durationMs: 600_000, endsAt: 1_800_000_600_000 }),
        expect.objectContaining({ action: 'breaker.reset', durationMs: null, endsAt: null }),
      ]);
    });

    describe('idempotency keys', () => {
      it('claims a new key, then answers in_flight with the time the lease has left', async () => {
        const ref = freshKey();
        const first = await store.claimIdempotencyKey(ref, claimOf({ leaseMs: 30_000 }));
        // A store without replicas (as in these tests) keeps nothing durable.
        expect(first).toEqual({ outcome: 'claimed', leaseExpiresAt: expect.any(Number), durable: false });
        const second = await store.claimIdempotencyKey(ref, claimOf({ leaseMs: 30_000 }));
        expect(second).toEqual({ outcome: 'in_flight', leaseRemainingMs: expect.any(Number) });
        if (second.outcome !== 'in_flight') throw new Error('unreachable');
        expect(second.leaseRemainingMs).toBeGreaterThan(0);
        expect(second.leaseRemainingMs).toBeLessThanOrEqual(30_000);
      });

      it('answers mismatch to another fingerprint, in flight and completed, without touching the key', async () => {
        const ref = freshKey();
        const claim = claimOf();
        await store.claimIdempotencyKey(ref, claim);
        expect(await store.claimIdempotencyKey(ref, claimOf({ fingerprint: 'sha256:request-b' }))).toEqual({
          outcome: 'mismatch',
        });
        expect(await store.completeIdempotencyKey(ref, { token: claim.token, response: RESPONSE })).toBe('completed');
        expect(await store.claimIdempotencyKey(ref, claimOf({ fingerprint: 'sha256:request-b' }))).toEqual({
          outcome: 'mismatch',
        });
        expect(await store.claimIdempotencyKey(ref, claimOf())).toEqual({ outcome: 'completed', response: RESPONSE });
      });

      it('lets only the current token complete; replays the first stored response exactly', async () => {
        const ref = freshKey();
        const claim = claimOf();
        await store.claimIdempotencyKey(ref, claim);
        expect(await store.completeIdempotencyKey(ref, { token: token(), response: 'forged' })).toBe('lease_lost');
        expect(await store.completeIdempotencyKey(ref, { token: claim.token, response: RESPONSE })).toBe('completed');
        // A repeated completion (its answer was lost) succeeds and keeps the first response.
        expect(await store.completeIdempotencyKey(ref, { token: claim.token, response: 'second' })).toBe('completed');
        expect(await store.claimIdempotencyKey(ref, claimOf())).toEqual({ outcome: 'completed', response: RESPONSE });
        expect(await store.completeIdempotencyKey(freshKey(), { token: claim.token, response: RESPONSE })).toBe(
          'lease_lost',
        );
      });

      it('takes over an expired lease (recovered) and fences the old token off', async () => {
        const ref = freshKey();
        const crashed = claimOf({ leaseMs: 200, retentionMs: 60_000 });
        expect((await store.claimIdempotencyKey(ref, crashed)).outcome).toBe('claimed');
        await subject.pass(300);
        const successor = claimOf({ leaseMs: 30_000, retentionMs: 60_000 });
        expect(await store.claimIdempotencyKey(ref, successor)).toEqual({
          outcome: 'recovered',
          leaseExpiresAt: expect.any(Number),
          durable: false,
        });
        expect(await store.claimIdempotencyKey(ref, claimOf())).toMatchObject({ outcome: 'in_flight' });
        expect(await store.completeIdempotencyKey(ref, { token: crashed.token, response: 'late' })).toBe('lease_lost');
        expect(await store.releaseIdempotencyKey(ref, crashed.token)).toBe('lease_lost');
        expect(await store.completeIdempotencyKey(ref, { token: successor.token, response: RESPONSE })).toBe(
          'completed',
        );
        expect(await store.claimIdempotencyKey(ref, claimOf())).toEqual({ outcome: 'completed', response: RESPONSE });
      });

      it('lets a holder whose lease ran out complete while nobody took over', async () => {
        const ref = freshKey();
        const slow = claimOf({ leaseMs: 200, retentionMs: 60_000 });
        await store.claimIdempotencyKey(ref, slow);
        await subject.pass(300);
        expect(await store.completeIdempotencyKey(ref, { token: slow.token, response: RESPONSE })).toBe('completed');
        expect(await store.claimIdempotencyKey(ref, claimOf())).toEqual({ outcome: 'completed', response: RESPONSE });
      });

      it('releases only for the current token while in flight; a released key is new again', async () => {
        const ref = freshKey();
        const claim = claimOf();
        await store.claimIdempotencyKey(ref, claim);
        expect(await store.releaseIdempotencyKey(ref, token())).toBe('lease_lost');
        expect(await store.releaseIdempotencyKey(ref, claim.token)).toBe('released');
        expect(await store.readIdempotencyKey(ref)).toBeNull();
        expect(await store.releaseIdempotencyKey(ref, claim.token)).toBe('absent');
        const again = claimOf({ fingerprint: 'sha256:request-b' });
        expect((await store.claimIdempotencyKey(ref, again)).outcome).toBe('claimed');
        await store.completeIdempotencyKey(ref, { token: again.token, response: RESPONSE });
        expect(await store.releaseIdempotencyKey(ref, again.token)).toBe('lease_lost');
        expect(await store.claimIdempotencyKey(ref, claimOf({ fingerprint: 'sha256:request-b' }))).toMatchObject({
          outcome: 'completed',
        });
      });

      it('reads the state and times of a key, and null for an unknown one', async () => {
        const ref = freshKey();
        expect(await store.readIdempotencyKey(ref)).toBeNull();
        const claim = claimOf({ leaseMs: 30_000, retentionMs: 60_000 });
        const claimed = await store.claimIdempotencyKey(ref, claim);
        if (claimed.outcome !== 'claimed') throw new Error(`not claimed: ${claimed.outcome}`);
        const inFlight = await store.readIdempotencyKey(ref);
        expect(inFlight).toEqual({
          state: 'in_flight',
          createdAt: claimed.leaseExpiresAt - 30_000,
          leaseExpiresAt: claimed.leaseExpiresAt,
          expiresAt: expect.any(Number),
        });
        // In flight, the key lives max(lease, retention) from the claim.
        expect(inFlight!.expiresAt).toBe(inFlight!.createdAt + 60_000);
        await store.completeIdempotencyKey(ref, { token: claim.token, response: RESPONSE });
        const completed = await store.readIdempotencyKey(ref);
        expect(completed).toEqual({
          state: 'completed',
          createdAt: inFlight!.createdAt,
          completedAt: expect.any(Number),
          expiresAt: expect.any(Number),
        });
        // Completed, it lives its retention from the completion.
        expect(completed!.completedAt).toBeGreaterThanOrEqual(completed!.createdAt);
        expect(completed!.expiresAt).toBe(completed!.completedAt! + 60_000);
      });

      it('forgets a completed key after its retention, and an abandoned one after max(lease, retention)', async () => {
        const completed = freshKey();
        const claim = claimOf({ leaseMs: 200, retentionMs: 1000 });
        await store.claimIdempotencyKey(completed, claim);
        await store.completeIdempotencyKey(completed, { token: claim.token, response: RESPONSE });
        const abandoned = freshKey();
        await store.claimIdempotencyKey(abandoned, claimOf({ leaseMs: 200, retentionMs: 1000 }));
        await subject.pass(1100);
        expect(await store.readIdempotencyKey(completed)).toBeNull();
        expect(await store.readIdempotencyKey(abandoned)).toBeNull();
        // New again: claimed (not recovered), and with another fingerprint too.
        expect((await store.claimIdempotencyKey(completed, claimOf({ fingerprint: 'other' }))).outcome).toBe('claimed');
        expect((await store.claimIdempotencyKey(abandoned, claimOf())).outcome).toBe('claimed');
      });

      it('keeps the same key of two namespaces apart', async () => {
        const key = `shared-${++sequence}`;
        const a = { namespace: 'team-a', key };
        const b = { namespace: 'team-b', key };
        const claim = claimOf();
        await store.claimIdempotencyKey(a, claim);
        await store.completeIdempotencyKey(a, { token: claim.token, response: RESPONSE });
        expect((await store.claimIdempotencyKey(b, claimOf({ fingerprint: 'other' }))).outcome).toBe('claimed');
      });

      it('grants exactly one of many concurrent claims', async () => {
        const ref = freshKey();
        const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.claimIdempotencyKey(ref, claimOf())));
        expect(outcomes.filter((o) => o.outcome === 'claimed')).toHaveLength(1);
        expect(outcomes.filter((o) => o.outcome === 'in_flight')).toHaveLength(49);
      });
    });

    describe('delivery attempts and dead letters', () => {
      it('counts failed attempts and parks the message on attempt maxAttempts, payload intact', async () => {
        const ref = freshQueue();
        const attempt = attemptOf('msg-1', { maxAttempts: 3 });
        const outcomes = [];
        for (let i = 0; i < 3; i++) {
          outcomes.push(await store.recordDeliveryAttempt(ref, { ...attempt, error: `failure ${i + 1}` }));
        }
        expect(outcomes).toEqual([
          { attempt: 1, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 },
          { attempt: 2, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 },
          { attempt: 3, deadLetter: true, parkedNow: true, depth: 1, dropped: 0 },
        ]);
        const page = await store.listDeadLetters(ref, { limit: 10, retention: DEAD_LETTERS });
        expect(page).toEqual({
          items: [
            {
              messageId: 'msg-1',
              payload: attempt.payload,
              error: 'failure 3',
              attempts: 3,
              deadLetteredAt: expect.any(Number),
              firstAttemptAt: expect.any(Number),
            },
          ],
          next: null,
          depth: 1,
        });
        expect(page.items[0].firstAttemptAt).toBeLessThanOrEqual(page.items[0].deadLetteredAt);
      });

      it('keeps a parked message parked and uncounted when it comes again, without a second entry', async () => {
        const ref = freshQueue();
        const attempt = attemptOf('msg-1', { maxAttempts: 1 });
        expect(await store.recordDeliveryAttempt(ref, attempt)).toEqual({
          attempt: 1,
          deadLetter: true,
          parkedNow: true,
          depth: 1,
          dropped: 0,
        });
        expect(await store.recordDeliveryAttempt(ref, { ...attempt, maxAttempts: 5 })).toEqual({
          attempt: 1,
          deadLetter: true,
          parkedNow: false,
          depth: 1,
          dropped: 0,
        });
        expect((await store.listDeadLetters(ref, { limit: 10, retention: DEAD_LETTERS })).items).toHaveLength(1);
      });

      it('keeps an absent payload and error as null', async () => {
        const ref = freshQueue();
        await store.recordDeliveryAttempt(ref, attemptOf('bare', { maxAttempts: 1, payload: null, error: null }));
        const [entry] = (await store.listDeadLetters(ref, { limit: 1, retention: DEAD_LETTERS })).items;
        expect(entry).toMatchObject({ messageId: 'bare', payload: null, error: null, attempts: 1 });
      });

      it('forgets the count on ack, so the next failure is attempt 1 again', async () => {
        const ref = freshQueue();
        await store.recordDeliveryAttempt(ref, attemptOf('msg-1'));
        await store.recordDeliveryAttempt(ref, attemptOf('msg-1'));
        expect(await store.ackDelivery(ref, 'msg-1')).toBe(true);
        expect(await store.ackDelivery(ref, 'msg-1')).toBe(false);
        expect((await store.recordDeliveryAttempt(ref, attemptOf('msg-1'))).attempt).toBe(1);
      });

      it('keeps queues and messages apart', async () => {
        const a = freshQueue();
        const b = freshQueue();
        await store.recordDeliveryAttempt(a, attemptOf('msg-1'));
        await store.recordDeliveryAttempt(a, attemptOf('msg-1'));
        expect((await store.recordDeliveryAttempt(a, attemptOf('msg-2'))).attempt).toBe(1);
        expect((await store.recordDeliveryAttempt(b, attemptOf('msg-1'))).attempt).toBe(1);
      });

      it('pages dead letters oldest first with a cursor', async () => {
        const ref = freshQueue();
        const ids = Array.from({ length: 5 }, (_, i) => `msg-${i}`);
        for (const id of ids) await store.recordDeliveryAttempt(ref, attemptOf(id, { maxAttempts: 1 }));
        const first = await store.listDeadLetters(ref, { limit: 2, retention: DEAD_LETTERS });
        expect(first.items.map((entry) => entry.messageId)).toEqual(['msg-0', 'msg-1']);
        expect(first.depth).toBe(5);
        expect(first.next).toEqual(expect.any(String));
        const second = await store.listDeadLetters(ref, { limit: 2, after: first.next!, retention: DEAD_LETTERS });
        expect(second.items.map((entry) => entry.messageId)).toEqual(['msg-2', 'msg-3']);
        // A dead letter removed between pages does not shift the next one.
        await store.purgeDeadLetter(ref, 'msg-2');
        const third = await store.listDeadLetters(ref, { limit: 2, after: second.next!, retention: DEAD_LETTERS });
        expect(third).toMatchObject({ items: [{ messageId: 'msg-4' }], next: null, depth: 4 });
        const all = await store.listDeadLetters(ref, { limit: 10, retention: DEAD_LETTERS });
        expect(all.items.map((entry) => entry.messageId)).toEqual(['msg-0', 'msg-1', 'msg-3', 'msg-4']);
        expect(all.next).toBeNull();
      });

      it('redrives a dead letter: the entry comes back, leaves the store, and the count starts over', async () => {
        const ref = freshQueue();
        const attempt = attemptOf('msg-1', { maxAttempts: 2 });
        await store.recordDeliveryAttempt(ref, attempt);
        await store.recordDeliveryAttempt(ref, attempt);
        const entry = await store.redriveDeadLetter(ref, 'msg-1');
        expect(entry).toMatchObject({ messageId: 'msg-1', payload: attempt.payload, error: 'boom', attempts: 2 });
        expect(await store.redriveDeadLetter(ref, 'msg-1')).toBeNull();
        expect(await store.countDeadLetters(ref, DEAD_LETTERS)).toBe(0);
        expect(await store.recordDeliveryAttempt(ref, attempt)).toMatchObject({ attempt: 1, deadLetter: false });
      });

      it('purges a dead letter and its count; an unknown one is false', async () => {
        const ref = freshQueue();
        await store.recordDeliveryAttempt(ref, attemptOf('msg-1', { maxAttempts: 1 }));
        await store.recordDeliveryAttempt(ref, attemptOf('msg-2', { maxAttempts: 1 }));
        expect(await store.purgeDeadLetter(ref, 'msg-1')).toBe(true);
        expect(await store.purgeDeadLetter(ref, 'msg-1')).toBe(false);
        expect(await store.purgeDeadLetter(ref, 'never')).toBe(false);
        expect(await store.countDeadLetters(ref, DEAD_LETTERS)).toBe(1);
        expect((await store.recordDeliveryAttempt(ref, attemptOf('msg-1'))).attempt).toBe(1);
      });

      it('drops dead letters past their retention, and the oldest past the maximum length', async () => {
        const aging = freshQueue();
        const short = { retentionMs: 1000, maxLength: 100 };
        // Parked under a long retention, the queue outlives the wait: old is dropped as an entry past the short one.
        await store.recordDeliveryAttempt(aging, attemptOf('old', { maxAttempts: 1, deadLetters: DEAD_LETTERS }));
        // Past old's retention however long the wait takes; young is listed a moment after it was parked.
        await subject.pass(1100);
        await store.recordDeliveryAttempt(aging, attemptOf('young', { maxAttempts: 1, deadLetters: short }));
        const page = await store.listDeadLetters(aging, { limit: 10, retention: short });
        expect(page).toMatchObject({ items: [{ messageId: 'young' }], depth: 1 });

        const capped = freshQueue();
        const three = { ...DEAD_LETTERS, maxLength: 3 };
        for (let i = 0; i < 5; i++) {
          await store.recordDeliveryAttempt(capped, attemptOf(`msg-${i}`, { maxAttempts: 1, deadLetters: three }));
        }
        const kept = await store.listDeadLetters(capped, { limit: 10, retention: three });
        expect(kept.items.map((entry) => entry.messageId)).toEqual(['msg-2', 'msg-3', 'msg-4']);
        expect(await store.countDeadLetters(capped, three)).toBe(3);
      });

      it('forgets an attempt count after its retention', async () => {
        const ref = freshQueue();
        await store.recordDeliveryAttempt(ref, attemptOf('msg-1', { attemptRetentionMs: 1000 }));
        await subject.pass(1100);
        expect((await store.recordDeliveryAttempt(ref, attemptOf('msg-1'))).attempt).toBe(1);
      });

      it('parks exactly once under concurrent failures of one message', async () => {
        const ref = freshQueue();
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, () => store.recordDeliveryAttempt(ref, attemptOf('msg-1', { maxAttempts: 5 }))),
        );
        expect(outcomes.map((o) => o.attempt).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, ...Array(16).fill(5)]);
        expect(outcomes.filter((o) => o.parkedNow)).toHaveLength(1);
        expect(await store.countDeadLetters(ref, DEAD_LETTERS)).toBe(1);
      });

      it('reads an unknown queue as empty', async () => {
        const ref = freshQueue();
        expect(await store.listDeadLetters(ref, { limit: 10, retention: DEAD_LETTERS })).toEqual({
          items: [],
          next: null,
          depth: 0,
        });
        expect(await store.countDeadLetters(ref, DEAD_LETTERS)).toBe(0);
      });

      it('lists the queues that parked dead letters by name, a page at a time, with their latest parking', async () => {
        const namespace = `dlq-queues-${++sequence}`;
        const terms = { retentionMs: 60_000, maxQueues: 100 };
        const page = (limit: number, after?: string) =>
          store.listDeadLetterQueues(namespace, { retentionMs: terms.retentionMs, limit, ...(after ? { after } : {}) });
        expect(await page(10)).toEqual({ items: [], next: null });
        for (const queue of ['refunds', 'emails', 'orders', 'emails']) {
          await store.noteDeadLetterQueue({ namespace, queue }, terms);
        }
        const first = await page(2);
        expect(first.items.map((item) => item.queue)).toEqual(['emails', 'orders']);
        expect(first.next).toBe('orders');
        const rest = await page(2, first.next!);
        expect(rest).toEqual({ items: [{ queue: 'refunds', lastDeadLetteredAt: expect.any(Number) }], next: null });
        const all = await page(10);
        expect(all.next).toBeNull();
        const at = Object.fromEntries(all.items.map((item) => [item.queue, item.lastDeadLetteredAt]));
        expect(at.emails).toBeGreaterThanOrEqual(at.orders);
        expect(await store.listDeadLetterQueues(`other-${namespace}`, { retentionMs: 60_000, limit: 10 })).toEqual({
          items: [],
          next: null,
        });
      });

      it('keeps the most recently parking queues past the cap, and forgets a queue quiet for the retention', async () => {
        const namespace = `dlq-queues-${++sequence}`;
        const terms = { retentionMs: 1000, maxQueues: 2 };
        for (const queue of ['a-queue', 'b-queue']) {
          await store.noteDeadLetterQueue({ namespace, queue }, terms);
          await subject.pass(10);
        }
        await store.noteDeadLetterQueue({ namespace, queue: 'c-queue' }, terms);
        const listed = async () =>
          (await store.listDeadLetterQueues(namespace, { retentionMs: terms.retentionMs, limit: 10 })).items.map(
            (item) => item.queue,
          );
        expect(await listed()).toEqual(['b-queue', 'c-queue']);
        await subject.pass(600);
        await store.noteDeadLetterQueue({ namespace, queue: 'c-queue' }, terms);
        await subject.pass(500);
        expect(await listed()).toEqual(['c-queue']);
      });
    });

    describe('caller-chosen ids', () => {
      const READ_ONE = { budget: BUDGET, outcomeWindowSeconds: 10 };
      const retriesOf = async (ref: DependencyRef) => (await store.readDependency(ref, READ_ONE)).budget.retries;

      it('answers a repeat of a granted retry with the first grant, its delay and budget, counting no second retry', async () => {
        const ref = freshRef();
        const first = await store.decideRetry(ref, { budget: BUDGET, delayMs: 40, requestId: 'req-1' });
        expect(first).toMatchObject({ verdict: 'granted', delayMs: 40, budget: { retries: 1, limit: 100 } });
        // The repeat comes with another delay (new jitter): the first grant's is answered.
        const repeat = await store.decideRetry(ref, { budget: BUDGET, delayMs: 70, requestId: 'req-1' });
        expect(repeat).toMatchObject({ verdict: 'granted', delayMs: 40, budget: first.budget });
        expect(await retriesOf(ref)).toBe(1);
        // A new id is one more retry; a retry without an id is one more too.
        const second = await store.decideRetry(ref, { budget: BUDGET, delayMs: 70, requestId: 'req-2' });
        expect(second).toMatchObject({ verdict: 'granted', delayMs: 70, budget: { retries: 2 } });
        expect((await store.decideRetry(ref, { budget: BUDGET, delayMs: 5 })).budget.retries).toBe(3);
        expect(await retriesOf(ref)).toBe(3);
        // The same id on another dependency is another ask.
        const elsewhere = await store.decideRetry(freshRef(), { budget: BUDGET, delayMs: 9, requestId: 'req-1' });
        expect(elsewhere).toMatchObject({ verdict: 'granted', delayMs: 9, budget: { retries: 1 } });
      });

      it('keeps a grant for each of many concurrent repeats of one id, counting it once', async () => {
        const ref = freshRef();
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.decideRetry(ref, { budget: BUDGET, delayMs: i, requestId: 'once' }),
          ),
        );
        expect(new Set(answers.map((answer) => answer.delayMs)).size).toBe(1);
        expect(answers.every((answer) => answer.verdict === 'granted' && answer.budget.retries === 1)).toBe(true);
        expect(await retriesOf(ref)).toBe(1);
      });

      it('does not keep a denied retry: a repeat is decided again', async () => {
        const ref = freshRef();
        const tight = { ...BUDGET, minRetriesPerSecond: 0.1 }; // limit floor(0 + 1) = 1
        expect((await store.decideRetry(ref, { budget: tight, delayMs: 0, requestId: 'a' })).verdict).toBe('granted');
        expect((await store.decideRetry(ref, { budget: tight, delayMs: 0, requestId: 'b' })).verdict).toBe(
          'budget_exhausted',
        );
        await store.recordOutcomes(ref, batch({ requests: 100 }), WINDOWS); // limit floor(10 + 1) = 11
        const again = await store.decideRetry(ref, { budget: tight, delayMs: 0, requestId: 'b' });
        expect(again).toMatchObject({ verdict: 'granted', budget: { retries: 2, limit: 11 } });
      });

      it('keeps a granted retry under the dependency for a bounded time', async () => {
        const ref = freshRef();
        await store.decideRetry(ref, { budget: BUDGET, delayMs: 40, requestId: 'kept' });
        await expectKeptAtMost(
          subject,
          (keys) => keys.dependencyRequests(ref.namespace, ref.dependency).retry('kept'),
          retryOutcomeTtlMs(BUDGET.windowSeconds),
          async () => (await store.decideRetry(ref, { budget: BUDGET, delayMs: 70, requestId: 'kept' })).delayMs === 70,
        );
      });

      it('resumes a claim asked again with its own claimId while in flight: the same token, nothing changed', async () => {
        const ref = freshKey();
        const claim = claimOf({ claimId: 'claim-1' });
        const first = await store.claimIdempotencyKey(ref, claim);
        if (first.outcome !== 'claimed') throw new Error(`not claimed: ${first.outcome}`);
        const before = await store.readIdempotencyKey(ref);
        // The repeat carries a new token (the service makes one per request): the first one is answered.
        expect(await store.claimIdempotencyKey(ref, claimOf({ claimId: 'claim-1' }))).toEqual({
          outcome: 'resumed',
          token: claim.token,
          leaseExpiresAt: first.leaseExpiresAt,
          recovered: false,
          durable: false,
        });
        expect(await store.readIdempotencyKey(ref)).toEqual(before);
        // Another claim id, or none, is another request: in flight. Another fingerprint is a mismatch.
        expect(await store.claimIdempotencyKey(ref, claimOf({ claimId: 'claim-2' }))).toMatchObject({
          outcome: 'in_flight',
        });
        expect(await store.claimIdempotencyKey(ref, claimOf())).toMatchObject({ outcome: 'in_flight' });
        expect(
          await store.claimIdempotencyKey(ref, claimOf({ claimId: 'claim-1', fingerprint: 'sha256:request-b' })),
        ).toEqual({ outcome: 'mismatch' });
        // The resumed token is the key's: it completes it, and the claim id then gets the response.
        expect(await store.completeIdempotencyKey(ref, { token: claim.token, response: RESPONSE })).toBe('completed');
        expect(await store.claimIdempotencyKey(ref, claimOf({ claimId: 'claim-1' }))).toEqual({
          outcome: 'completed',
          response: RESPONSE,
        });
      });

      it('resumes a recovery as recovered; once a lease ran out, its claim id takes over like any other', async () => {
        const ref = freshKey();
        const crashed = claimOf({ claimId: 'first', leaseMs: 200, retentionMs: 60_000 });
        await store.claimIdempotencyKey(ref, crashed);
        await subject.pass(300);
        const successor = claimOf({ claimId: 'second', leaseMs: 30_000, retentionMs: 60_000 });
        const recovered = await store.claimIdempotencyKey(ref, successor);
        if (recovered.outcome !== 'recovered') throw new Error(`not recovered: ${recovered.outcome}`);
        expect(await store.claimIdempotencyKey(ref, claimOf({ claimId: 'second' }))).toEqual({
          outcome: 'resumed',
          token: successor.token,
          leaseExpiresAt: recovered.leaseExpiresAt,
          recovered: true,
          durable: false,
        });
        // The first claim id no longer holds the key.
        expect(await store.claimIdempotencyKey(ref, claimOf({ claimId: 'first' }))).toMatchObject({
          outcome: 'in_flight',
        });
        // A taker without a claim id leaves none behind: 'second' is not resumed after its own lease ran out.
        const short = freshKey();
        await store.claimIdempotencyKey(short, claimOf({ claimId: 'mine', leaseMs: 200, retentionMs: 60_000 }));
        await subject.pass(300);
        const plain = claimOf({ leaseMs: 30_000, retentionMs: 60_000 });
        expect((await store.claimIdempotencyKey(short, plain)).outcome).toBe('recovered');
        expect(await store.claimIdempotencyKey(short, claimOf({ claimId: 'mine' }))).toMatchObject({
          outcome: 'in_flight',
        });
      });

      it('records a numbered delivery attempt once: a repeat changes nothing and answers the same', async () => {
        const ref = freshQueue();
        const attempt = (n: number) =>
          store.recordDeliveryAttempt(ref, attemptOf('msg-1', { maxAttempts: 3, attempt: n }));
        const first = await attempt(1);
        expect(first).toEqual({ attempt: 1, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 });
        expect(await attempt(1)).toEqual(first);
        expect(await attempt(2)).toEqual({ attempt: 2, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 });
        expect(await attempt(2)).toEqual({ attempt: 2, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 });
        // An older delivery's failure, late: nothing changes.
        expect(await attempt(1)).toEqual({ attempt: 2, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 });
        expect(await attempt(3)).toEqual({ attempt: 3, deadLetter: true, parkedNow: true, depth: 1, dropped: 0 });
        expect(await attempt(3)).toEqual({ attempt: 3, deadLetter: true, parkedNow: false, depth: 1, dropped: 0 });
        const page = await store.listDeadLetters(ref, { limit: 10, retention: DEAD_LETTERS });
        expect(page.items).toEqual([expect.objectContaining({ messageId: 'msg-1', attempts: 3 })]);
      });

      it('counts a numbered attempt past the count as that attempt, and one without a number as one more', async () => {
        const ref = freshQueue();
        const record = (fields: Partial<DeliveryAttemptRecord>) =>
          store.recordDeliveryAttempt(ref, attemptOf('msg-1', { maxAttempts: 5, ...fields }));
        // Deliveries 1 and 2 failed without being recorded (the consumer crashed): 3 counts as 3.
        expect(await record({ attempt: 3 })).toMatchObject({ attempt: 3, deadLetter: false });
        expect(await record({})).toMatchObject({ attempt: 4, deadLetter: false });
        expect(await record({ attempt: 4 })).toMatchObject({ attempt: 4, deadLetter: false });
        expect(await record({ attempt: 9 })).toEqual({
          attempt: 9,
          deadLetter: true,
          parkedNow: true,
          depth: 1,
          dropped: 0,
        });
        const [entry] = (await store.listDeadLetters(ref, { limit: 1, retention: DEAD_LETTERS })).items;
        expect(entry).toMatchObject({ messageId: 'msg-1', attempts: 9 });
        expect(entry.firstAttemptAt).toBeLessThanOrEqual(entry.deadLetteredAt);
        // Redriven, the count starts over.
        await store.redriveDeadLetter(ref, 'msg-1');
        expect(await record({ attempt: 1 })).toMatchObject({ attempt: 1, deadLetter: false });
      });

      it('records one of many concurrent repeats of a numbered attempt', async () => {
        const ref = freshQueue();
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, () =>
            store.recordDeliveryAttempt(ref, attemptOf('msg-1', { maxAttempts: 2, attempt: 2 })),
          ),
        );
        expect(outcomes.every((outcome) => outcome.attempt === 2 && outcome.deadLetter)).toBe(true);
        expect(outcomes.filter((outcome) => outcome.parkedNow)).toHaveLength(1);
        expect(await store.countDeadLetters(ref, DEAD_LETTERS)).toBe(1);
      });
    });

    it('answers a ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
