import { LATENCY_BOUNDS_MS, fixedBucketOf } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type ConcurrencyPolicy, type RateLimitPolicy } from '@sluice/protocol';
import { admitOutcomeTtlMs, takeOutcomeTtlMs, type AdmitRequest, type DependencyRef, type Store } from '../src';
import { batch, expectKeptAtMost, type StoreUnderTest } from './store-conformance';

const HOUR = 3_600_000;
const BREAKER = DEFAULT_DEPENDENCY_POLICY.breaker;
const BUDGET = DEFAULT_DEPENDENCY_POLICY.retryBudget;

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'limits', dependency: `dep-${++sequence}` });
const freshLimit = () => ({ namespace: 'limits', limit: `limit-${++sequence}`, key: 'user-42' });

/** Rate limits (named and a dependency's), concurrency leases and latency percentiles, alike on every Store. */
export function describeLimitsConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Limits conformance: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    const admit = (
      ref: DependencyRef,
      limits: { rateLimit?: RateLimitPolicy; concurrency?: ConcurrencyPolicy; cost?: number; requestId?: string },
    ) => {
      const request: AdmitRequest = {
        breaker: BREAKER,
        probeToken: `probe-${++sequence}`,
        rateLimit: limits.rateLimit ?? null,
        cost: limits.cost ?? 1,
        concurrency: limits.concurrency ?? null,
        leaseId: `lease-${++sequence}`,
        ...(limits.requestId !== undefined ? { requestId: limits.requestId } : {}),
      };
      return store.admit(ref, request);
    };

    it('grants exactly the burst of a slow named limit, counting remaining down', async () => {
      const ref = freshLimit();
      const policy = { rate: 100, periodMs: HOUR, burst: 100 };
      const answers = [];
      for (let i = 0; i < 105; i++) answers.push(await store.takeRateLimit(ref, policy, 1));
      expect(answers.filter((answer) => answer.allow)).toHaveLength(100);
      expect(answers.slice(0, 3).map((answer) => answer.remaining)).toEqual([99, 98, 97]);
      expect(answers[99]).toMatchObject({ allow: true, remaining: 0, limit: 100 });
      const denied = answers[100];
      expect(denied).toMatchObject({ allow: false, remaining: 0, limit: 100 });
      expect(denied.retryAfterMs).toBeGreaterThan(35_000);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(36_000);
      // Another key of the same limit has its own burst.
      expect((await store.takeRateLimit({ ...ref, key: 'user-43' }, policy, 1)).allow).toBe(true);
    });

    it('grants exactly the burst under concurrent takes', async () => {
      const ref = freshLimit();
      const policy = { rate: 50, periodMs: HOUR, burst: 50 };
      const answers = await Promise.all(Array.from({ length: 200 }, () => store.takeRateLimit(ref, policy, 1)));
      expect(answers.filter((answer) => answer.allow)).toHaveLength(50);
    });

    it('grants a denied take once its Retry-After has passed, and charges the cost', async () => {
      const ref = freshLimit();
      const policy = { rate: 10, periodMs: 1000, burst: 5 };
      expect((await store.takeRateLimit(ref, policy, 5)).allow).toBe(true);
      const denied = await store.takeRateLimit(ref, policy, 2);
      expect(denied.allow).toBe(false);
      expect(denied.retryAfterMs).toBeGreaterThan(100);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(200);
      await subject.pass(denied.retryAfterMs + 20);
      expect((await store.takeRateLimit(ref, policy, 2)).allow).toBe(true);
    });

    it("enforces a dependency's rate limit in admit, and a refused admit takes nothing", async () => {
      const ref = freshRef();
      const rateLimit = { rate: 3, periodMs: HOUR, burst: 3 };
      await store.setBreaker(ref, { action: 'trip', reason: 'test' });
      for (let i = 0; i < 5; i++) expect((await admit(ref, { rateLimit })).verdict).toBe('breaker_open');
      await store.setBreaker(ref, { action: 'reset' });
      const verdicts = [];
      for (let i = 0; i < 4; i++) verdicts.push((await admit(ref, { rateLimit })).verdict);
      expect(verdicts).toEqual(['granted', 'granted', 'granted', 'rate_limited']);
      const refused = await admit(ref, { rateLimit });
      expect(refused.retryAfterMs).toBeGreaterThan(0);
    });

    it('holds at most the concurrency limit, frees a released or expired lease, and renews a live one', async () => {
      const ref = freshRef();
      // Leases of a second: a renewal made right after its admit is in time however loaded the machine.
      const concurrency = { limit: 2, leaseMs: 1000 };
      const rateLimit = { rate: 3, periodMs: HOUR, burst: 3 };
      const first = await admit(ref, { concurrency, rateLimit });
      const second = await admit(ref, { concurrency, rateLimit });
      expect([first.lease, second.lease].every(Boolean)).toBe(true);
      expect(second.leasesInUse).toBe(2);
      const full = await admit(ref, { concurrency, rateLimit });
      expect(full).toMatchObject({ verdict: 'concurrency_limited', leasesInUse: 2 });
      expect(full.retryAfterMs).toBeGreaterThan(0);
      expect(await store.releaseLease(ref, first.lease!.id)).toEqual({ released: true, leasesInUse: 1 });
      expect(await store.releaseLease(ref, first.lease!.id)).toEqual({ released: false, leasesInUse: 1 });
      // The refused admit took no rate: one token of the burst of 3 is left.
      const third = await admit(ref, { concurrency, rateLimit });
      expect(third.verdict).toBe('granted');
      expect((await admit(ref, { concurrency: { limit: 5, leaseMs: 300 }, rateLimit })).verdict).toBe('rate_limited');

      const renewed = await store.renewLease(ref, third.lease!.id, 60_000);
      expect(renewed.expiresAt).toBeGreaterThan(third.lease!.expiresAt);
      // Past the leases' second: only a lease's end counts, so a slow machine cannot change the outcome.
      await subject.pass(1100);
      // second expired (a crashed holder frees its slot); third was renewed past its own second.
      expect(await store.renewLease(ref, second.lease!.id, 1000)).toEqual({ expiresAt: null, leasesInUse: 1 });
      expect((await admit(ref, { concurrency })).verdict).toBe('granted');
      expect((await admit(ref, { concurrency })).verdict).toBe('concurrency_limited');
    });

    it('reads what the limits hold: the leases in use and what is left of the rate burst', async () => {
      const ref = freshRef();
      const concurrency = { limit: 5, leaseMs: 60_000 };
      const rateLimit = { rate: 4, periodMs: HOUR, burst: 4 };
      const read = (withRate: boolean) =>
        store.readDependency(ref, {
          budget: BUDGET,
          outcomeWindowSeconds: 10,
          ...(withRate ? { rateLimit } : {}),
        });
      expect((await read(true)).usage).toEqual({ leases: 0, rateRemaining: 4 });
      const first = await admit(ref, { concurrency, rateLimit });
      await admit(ref, { concurrency, rateLimit, cost: 2 });
      expect((await read(true)).usage).toEqual({ leases: 2, rateRemaining: 1 });
      await store.releaseLease(ref, first.lease!.id);
      // Without a rate limit to read, none is said.
      expect((await read(false)).usage).toEqual({ leases: 1, rateRemaining: null });
    });

    it('keeps a long lease when a shorter one joins or is renewed (the set lives as long as its longest lease)', async () => {
      const ref = freshRef();
      const long = await admit(ref, { concurrency: { limit: 2, leaseMs: 600_000 } });
      // A policy change shortens the leases handed out next.
      const short = await admit(ref, { concurrency: { limit: 2, leaseMs: 100 } });
      expect(short.lease).toBeDefined();
      expect((await store.renewLease(ref, short.lease!.id, 100)).expiresAt).not.toBeNull();
      await subject.pass(1300);
      expect(await store.renewLease(ref, long.lease!.id, 600_000)).toMatchObject({ leasesInUse: 1 });
      // The long lease and one more fill the limit (leases long enough to outlast a slow machine).
      expect((await admit(ref, { concurrency: { limit: 2, leaseMs: 60_000 } })).verdict).toBe('granted');
      expect((await admit(ref, { concurrency: { limit: 2, leaseMs: 60_000 } })).verdict).toBe('concurrency_limited');
    });

    it('holds the concurrency limit under concurrent admits', async () => {
      const ref = freshRef();
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => admit(ref, { concurrency: { limit: 10, leaseMs: 5000 } })),
      );
      expect(answers.filter((answer) => answer.lease)).toHaveLength(10);
    });

    describe('caller-chosen ids', () => {
      it('answers a repeat of a granted admission with the first lease, taking no second lease or rate', async () => {
        const ref = freshRef();
        const concurrency = { limit: 1, leaseMs: 5000 };
        const rateLimit = { rate: 2, periodMs: HOUR, burst: 2 };
        const first = await admit(ref, { concurrency, rateLimit, requestId: 'call-1' });
        expect(first).toMatchObject({ verdict: 'granted', lease: { id: expect.any(String) }, leasesInUse: 1 });
        // The repeat comes with a new lease id (the service makes one per request): the first lease is answered.
        const repeat = await admit(ref, { concurrency, rateLimit, requestId: 'call-1' });
        expect(repeat).toMatchObject({ verdict: 'granted', lease: first.lease, leasesInUse: 1 });
        expect(repeat.probe).toBeUndefined();
        // The one slot is the caller's own lease: a new id is refused, and releasing the lease frees it.
        expect((await admit(ref, { concurrency, rateLimit, requestId: 'call-2' })).verdict).toBe('concurrency_limited');
        expect(await store.releaseLease(ref, first.lease!.id)).toEqual({ released: true, leasesInUse: 0 });
        // The repeat took no rate: one of the burst of 2 is left for a new id, then none.
        expect((await admit(ref, { concurrency, rateLimit, requestId: 'call-3' })).verdict).toBe('granted');
        expect((await admit(ref, { rateLimit, requestId: 'call-4' })).verdict).toBe('rate_limited');
      });

      it('does not keep a refused admission: a repeat is decided again', async () => {
        const ref = freshRef();
        const concurrency = { limit: 1, leaseMs: 5000 };
        const holder = await admit(ref, { concurrency });
        expect((await admit(ref, { concurrency, requestId: 'waiting' })).verdict).toBe('concurrency_limited');
        await store.releaseLease(ref, holder.lease!.id);
        const again = await admit(ref, { concurrency, requestId: 'waiting' });
        expect(again).toMatchObject({ verdict: 'granted', lease: { id: expect.any(String) } });
        expect(again.lease!.id).not.toBe(holder.lease!.id);
      });

      it('keeps a granted admission under the dependency for a bounded time', async () => {
        const ref = freshRef();
        const concurrency = { limit: 5, leaseMs: 1000 };
        const first = await admit(ref, { concurrency, requestId: 'kept' });
        await expectKeptAtMost(
          subject,
          (keys) => keys.dependencyRequests(ref.namespace, ref.dependency).admit('kept'),
          admitOutcomeTtlMs(concurrency.leaseMs, BREAKER.probeLeaseMs),
          async () => (await admit(ref, { concurrency, requestId: 'kept' })).lease?.id !== first.lease!.id,
        );
      });

      it('answers a repeat of a granted take without taking again; a new id takes', async () => {
        const ref = freshLimit();
        const policy = { rate: 1, periodMs: HOUR, burst: 2 };
        const first = await store.takeRateLimit(ref, policy, 1, 'take-1');
        expect(first).toMatchObject({ allow: true, limit: 2, remaining: 1 });
        expect(await store.takeRateLimit(ref, policy, 1, 'take-1')).toEqual(first);
        expect(await store.takeRateLimit(ref, policy, 1, 'take-2')).toMatchObject({ allow: true, remaining: 0 });
        expect(await store.takeRateLimit(ref, policy, 1, 'take-3')).toMatchObject({ allow: false });
        expect(await store.takeRateLimit(ref, policy, 1)).toMatchObject({ allow: false });
        // Still the first answer, and still nothing taken twice.
        expect(await store.takeRateLimit(ref, policy, 1, 'take-1')).toEqual(first);
        // The same id on another key of the limit is another take.
        expect(await store.takeRateLimit({ ...ref, key: 'user-43' }, policy, 1, 'take-1')).toMatchObject({
          allow: true,
          remaining: 1,
        });
      });

      it('does not keep a denied take: a repeat is decided again', async () => {
        const ref = freshLimit();
        const policy = { rate: 10, periodMs: 1000, burst: 1 };
        expect((await store.takeRateLimit(ref, policy, 1, 'a')).allow).toBe(true);
        const denied = await store.takeRateLimit(ref, policy, 1, 'b');
        expect(denied.allow).toBe(false);
        await subject.pass(denied.retryAfterMs + 20);
        expect((await store.takeRateLimit(ref, policy, 1, 'b')).allow).toBe(true);
        expect((await store.takeRateLimit(ref, policy, 1, 'c')).allow).toBe(false);
      });

      it('keeps a granted take under the limit key for a bounded time', async () => {
        const ref = freshLimit();
        const policy = { rate: 1, periodMs: 60_000, burst: 2 };
        await store.takeRateLimit(ref, policy, 1, 'kept');
        await expectKeptAtMost(
          subject,
          (keys) => keys.rateLimitRequest(ref.namespace, ref.limit, ref.key, 'kept'),
          takeOutcomeTtlMs(policy.periodMs),
          async () => {
            // Forgotten, the repeat takes again: a new id after it finds one fewer left.
            await store.takeRateLimit(ref, policy, 1, 'kept');
            return (await store.takeRateLimit(ref, policy, 1, 'next')).remaining === 0;
          },
        );
      });
    });

    it('merges reported latency into fleet counts, and denies a retry whose delay plus p99 passes the deadline', async () => {
      const ref = freshRef();
      const counts = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
      counts[fixedBucketOf(20)] = 90;
      counts[fixedBucketOf(500)] = 10;
      await store.recordOutcomes(
        ref,
        { ...batch({ requests: 100, successes: 100 }), latency: counts },
        {
          budgetWindowSeconds: 10,
          breaker: BREAKER,
        },
      );
      await store.recordOutcomes(
        ref,
        { ...batch({ successes: 100 }), latency: counts },
        { budgetWindowSeconds: 10, breaker: BREAKER },
      );
      const { latency } = await store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });
      expect(latency[fixedBucketOf(20)]).toBe(180);
      expect(latency[fixedBucketOf(500)]).toBe(20);
      expect(latency.reduce((sum, count) => sum + count, 0)).toBe(200);
      const late = await store.decideRetry(ref, { budget: BUDGET, delayMs: 10, deadlineMs: 400 });
      expect(late.verdict).toBe('deadline_exceeded');
      const inTime = await store.decideRetry(ref, { budget: BUDGET, delayMs: 10, deadlineMs: 510 });
      expect(inTime.verdict).toBe('granted');
    });
  });
}
