import {
  DEFAULT_DEPENDENCY_POLICY,
  MAX_STORED_RESPONSE_BYTES,
  type BreakerPolicy,
  type ConcurrencyPolicy,
  type RateLimitPolicy,
} from '@sluice/protocol';
import { LONGEST_LEASE_MS } from '@sluice/core';
import type { DependencyRef, SluiceKeys, Store } from '../src';
import { BUDGET_MAGNITUDES, BUDGET_RATIOS, exactBudgetLimit } from './budget-reference';
import { batch, type StoreUnderTest } from './store-conformance';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BUDGET = DEFAULT_DEPENDENCY_POLICY.retryBudget;

/** A store under test whose clock can be stepped back. */
export interface EdgeStoreUnderTest extends StoreUnderTest {
  /**
   * What a step back of the store's clock by `ms` leaves: every instant stored in the named keys
   * is `ms` ahead of the clock (a fake clock moves back; on Redis, whose clock is TIME, the stored
   * instants of those keys move forward).
   */
  stepBack(ms: number, keys: (keys: SluiceKeys) => string[]): Promise<void>;
}

/** How many times each answer came. */
const tally = (answers: string[]) => {
  const counts: Record<string, number> = {};
  for (const answer of answers) counts[answer] = (counts[answer] ?? 0) + 1;
  return counts;
};

let sequence = 0;
const freshLimit = () => ({ namespace: 'edges', limit: `limit-${++sequence}`, key: 'user-42' });
const freshRef = (): DependencyRef => ({ namespace: 'edges', dependency: `dep-${++sequence}` });
const BREAKER = { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 1_000_000 };
/** A breaker that opens on 10 failed calls of 10, for 300 ms, with a probe lease of 300 ms. */
const TRIPPING: BreakerPolicy = {
  ...DEFAULT_DEPENDENCY_POLICY.breaker,
  minimumCalls: 10,
  minReporters: 1,
  openMs: 300,
  maxOpenMs: 1000,
  halfOpenProbes: 1,
  closeAfterSuccesses: 1,
  probeLeaseMs: 300,
};

/** The edges of the stores' arithmetic and clocks, alike on every Store (issue "Exact at the edges"). */
export function describeEdgeConformance(label: string, open: () => Promise<EdgeStoreUnderTest>): void {
  describe(`Edge conformance: ${label}`, () => {
    let subject: EdgeStoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    /** Takes `count` at once from a fresh key; the answers in order. */
    const takeAtOnce = (policy: RateLimitPolicy, count: number, cost = 1) => {
      const ref = freshLimit();
      return Promise.all(Array.from({ length: count }, () => store.takeRateLimit(ref, policy, cost)));
    };

    const admission = (limits: { rateLimit?: RateLimitPolicy; concurrency?: ConcurrencyPolicy } = {}) => ({
      breaker: TRIPPING,
      probeToken: `probe-${++sequence}`,
      rateLimit: limits.rateLimit ?? null,
      cost: 1,
      concurrency: limits.concurrency ?? null,
      leaseId: `lease-${++sequence}`,
    });
    const admit = (ref: DependencyRef, limits: { rateLimit?: RateLimitPolicy; concurrency?: ConcurrencyPolicy } = {}) =>
      store.admit(ref, admission(limits));

    describe('GCRA at fractional intervals', () => {
      it('grants both of two simultaneous takes at 6/s with a burst of 2, every time', async () => {
        const runs = await Promise.all(
          Array.from({ length: 100 }, () => takeAtOnce({ rate: 6, periodMs: 1000, burst: 2 }, 2)),
        );
        expect(tally(runs.map((run) => run.map(({ allow, remaining }) => `${allow}:${remaining}`).join(' ')))).toEqual({
          'true:1 true:0': 100,
        });
      });

      it('counts remaining down by one per take at 7 per hour with a burst of 100', async () => {
        const ref = freshLimit();
        const policy = { rate: 7, periodMs: HOUR, burst: 100 };
        const remaining: number[] = [];
        for (let i = 0; i < 101; i++) {
          const answer = await store.takeRateLimit(ref, policy, 1);
          remaining.push(answer.allow ? answer.remaining : -1);
        }
        expect(remaining).toEqual([...Array.from({ length: 100 }, (_, i) => 99 - i), -1]);
      });

      it('grants exactly the burst for every (rate, period, burst) with a fractional interval', async () => {
        const combinations = [3, 6, 7, 9, 11, 13].flatMap((rate) =>
          [HOUR, 2 * HOUR + 1].flatMap((periodMs) => [1, 2, 3, 5, 10].map((burst) => ({ rate, periodMs, burst }))),
        );
        const granted = await Promise.all(
          combinations.map(async (policy) => {
            const answers = await takeAtOnce(policy, policy.burst + 1);
            return `${policy.rate}/${policy.periodMs} burst ${policy.burst}: ${answers.filter((a) => a.allow).length}`;
          }),
        );
        expect(granted).toEqual(
          combinations.map((policy) => `${policy.rate}/${policy.periodMs} burst ${policy.burst}: ${policy.burst}`),
        );
      });

      it('advances the TAT at a very high rate: a take of 2 at 1e9/s leaves 1 of a burst of 3', async () => {
        const [answer] = await takeAtOnce({ rate: 1_000_000_000, periodMs: 1000, burst: 3 }, 1, 2);
        expect(answer).toMatchObject({ allow: true, remaining: 1 });
      });
    });

    describe('after a clock step back of an hour', () => {
      const openedBreaker = async () => {
        const ref = freshRef();
        const outcome = await store.recordOutcomes(ref, batch({ requests: 10, failures: 10 }), {
          budgetWindowSeconds: 10,
          breaker: TRIPPING,
        });
        expect(outcome.breaker.record.state).toBe('open');
        return ref;
      };
      const dependencyKeys = (ref: DependencyRef) => (keys: SluiceKeys) =>
        Object.values(keys.dependency(ref.namespace, ref.dependency));

      it("waits a named limit's interval, not the hour, for its next take", async () => {
        const ref = freshLimit();
        const policy = { rate: 10, periodMs: 1000, burst: 5 };
        expect((await store.takeRateLimit(ref, policy, 5)).allow).toBe(true);
        await subject.stepBack(HOUR, (keys) => [keys.rateLimit(ref.namespace, ref.limit, ref.key)]);
        const denied = await store.takeRateLimit(ref, policy, 1);
        expect(denied.allow).toBe(false);
        expect(denied.retryAfterMs).toBeLessThanOrEqual(100);
        expect(denied.resetMs).toBeLessThanOrEqual(500);
        await subject.pass(denied.retryAfterMs + 20);
        expect((await store.takeRateLimit(ref, policy, 1)).allow).toBe(true);
      });

      it("waits a dependency rate limit's interval, not the hour", async () => {
        const ref = freshRef();
        const rateLimit = { rate: 10, periodMs: 1000, burst: 1 };
        expect((await admit(ref, { rateLimit })).verdict).toBe('granted');
        await subject.stepBack(HOUR, dependencyKeys(ref));
        const denied = await admit(ref, { rateLimit });
        expect(denied.verdict).toBe('rate_limited');
        expect(denied.retryAfterMs).toBeLessThanOrEqual(100);
      });

      it('ends an open breaker after its open duration, not an hour later', async () => {
        const ref = await openedBreaker();
        await subject.stepBack(HOUR, dependencyKeys(ref));
        const refused = await admit(ref);
        expect(refused.verdict).toBe('breaker_open');
        expect(refused.retryAfterMs).toBeLessThanOrEqual(300);
        await subject.pass(350);
        expect(await admit(ref)).toMatchObject({ verdict: 'granted', probe: expect.anything() });
      });

      it('holds a probe lease at most the longest a probe lease can be (10 minutes) after a step back of a day', async () => {
        const ref = await openedBreaker();
        await subject.pass(350);
        expect(await admit(ref)).toMatchObject({ verdict: 'granted', probe: expect.anything() });
        await subject.stepBack(DAY, dependencyKeys(ref));
        const refused = await admit(ref);
        expect(refused.verdict).toBe('breaker_open');
        expect(refused.retryAfterMs).toBeLessThanOrEqual(LONGEST_LEASE_MS.probe);
      });

      it('holds a concurrency lease at most the longest a lease can be (an hour) after a step back of a day', async () => {
        const ref = freshRef();
        const concurrency = { limit: 1, leaseMs: 500 };
        expect((await admit(ref, { concurrency })).verdict).toBe('granted');
        await subject.stepBack(DAY, dependencyKeys(ref));
        const refused = await admit(ref, { concurrency });
        expect(refused.verdict).toBe('concurrency_limited');
        expect(refused.retryAfterMs).toBeLessThanOrEqual(LONGEST_LEASE_MS.concurrency);
      });

      it("lets an idempotency key's lease be taken over after its leaseMs, not an hour later", async () => {
        const ref = { namespace: 'edges', key: `Order:${++sequence}` };
        const claim = { fingerprint: 'f', leaseMs: 500, retentionMs: 60_000 };
        expect((await store.claimIdempotencyKey(ref, { ...claim, token: 'first' })).outcome).toBe('claimed');
        await subject.stepBack(HOUR, (keys) => [keys.idempotency(ref.namespace, ref.key).record]);
        const held = await store.claimIdempotencyKey(ref, { ...claim, token: 'second' });
        expect(held).toMatchObject({ outcome: 'in_flight' });
        expect(held.outcome === 'in_flight' && held.leaseRemainingMs).toBeLessThanOrEqual(500);
        await subject.pass(550);
        expect((await store.claimIdempotencyKey(ref, { ...claim, token: 'second' })).outcome).toBe('recovered');
      });

      it('ignores window buckets past the current second', async () => {
        const ref = freshRef();
        await store.recordOutcomes(ref, batch({ requests: 100, successes: 5 }), {
          budgetWindowSeconds: 10,
          breaker: BREAKER,
        });
        await subject.stepBack(HOUR, dependencyKeys(ref));
        const read = await store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 60 });
        expect(read.budget).toMatchObject({ requests: 0, retries: 0 });
        expect(read.outcomes).toEqual({ successes: 0, failures: 0, slow: 0 });
      });
    });

    describe('after a forced_closed lapses', () => {
      /** A dependency forced closed for 300 ms while 10 of 10 calls failed, then let lapse. */
      const lapsedWithFailures = async () => {
        const ref = freshRef();
        await store.setBreaker(ref, { action: 'force_close', reason: 'test', durationMs: 300 });
        const during = await store.recordOutcomes(ref, batch({ requests: 10, failures: 10 }), {
          budgetWindowSeconds: 10,
          breaker: TRIPPING,
        });
        expect(during.breaker.record.state).toBe('forced_closed');
        await subject.pass(350);
        return ref;
      };
      const report = (ref: DependencyRef) =>
        store.recordOutcomes(ref, batch({ successes: 1 }), { budgetWindowSeconds: 10, breaker: TRIPPING });
      const read = (ref: DependencyRef) => store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });

      it('starts from a fresh window when a report notices first', async () => {
        const ref = await lapsedWithFailures();
        expect((await report(ref)).breaker.record.state).toBe('closed');
        expect((await report(ref)).breaker.record.state).toBe('closed');
      });

      it('starts from a fresh window when an admit notices first', async () => {
        const ref = await lapsedWithFailures();
        expect((await admit(ref)).breaker.record.state).toBe('closed');
        expect((await report(ref)).breaker.record.state).toBe('closed');
        expect((await read(ref)).outcomes).toEqual({ successes: 1, failures: 0, slow: 0 });
      });

      it('starts from a fresh window when a retry or a read notices first', async () => {
        const retried = await lapsedWithFailures();
        expect((await store.decideRetry(retried, { budget: BUDGET, delayMs: 0 })).breaker.record.state).toBe('closed');
        expect((await report(retried)).breaker.record.state).toBe('closed');
        const read_ = await lapsedWithFailures();
        expect((await read(read_)).outcomes).toEqual({ successes: 0, failures: 0, slow: 0 });
        expect((await report(read_)).breaker.record.state).toBe('closed');
      });

      it('keeps counting the window of a trip made after the lapse', async () => {
        const ref = await lapsedWithFailures();
        expect((await admit(ref)).breaker.record.state).toBe('closed');
        await store.setBreaker(ref, { action: 'trip', reason: 'test' });
        await report(ref);
        await report(ref);
        expect((await read(ref)).outcomes).toEqual({ successes: 2, failures: 0, slow: 0 });
      });
    });

    describe('drift between the stores', () => {
      it('answers opens and probe successes from the record', async () => {
        const ref = freshRef();
        const policy = { budgetWindowSeconds: 10, breaker: { ...TRIPPING, closeAfterSuccesses: 2 } };
        await store.recordOutcomes(ref, batch({ requests: 10, failures: 10 }), policy);
        await subject.pass(350);
        const probe = (await store.admit(ref, { ...admission(), breaker: policy.breaker })).probe!;
        const after = await store.recordOutcomes(
          ref,
          { ...batch({}), probes: [{ token: probe.token, success: true }] },
          policy,
        );
        expect(after.breaker.record).toMatchObject({ state: 'half_open', opens: 1, probeSuccesses: 1 });
        const read = await store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });
        expect(read.breaker.record).toMatchObject({ state: 'half_open', opens: 1, probeSuccesses: 1 });
      });

      it('takes a negative deadline as passed, not as none', async () => {
        const decision = await store.decideRetry(freshRef(), { budget: BUDGET, delayMs: 0, deadlineMs: -1 });
        expect(decision.verdict).toBe('deadline_exceeded');
      });

      it('takes a negative trip duration as lapsed, not as until reset', async () => {
        const ref = freshRef();
        await store.setBreaker(ref, { action: 'trip', reason: 'test', durationMs: -1 });
        const read = await store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });
        expect(read.breaker.record.state).toBe('closed');
      });

      it('refuses to store a response past 256 KiB, and keeps the key in flight', async () => {
        const ref = { namespace: 'edges', key: `Order:${++sequence}` };
        await store.claimIdempotencyKey(ref, { fingerprint: 'f', token: 't', leaseMs: 30_000, retentionMs: 60_000 });
        const response = (bytes: number) =>
          JSON.stringify({
            status: 200,
            headers: { 'content-type': 'text/plain' },
            body: 'x'.repeat(bytes),
            bodyEncoding: 'utf8',
          });
        const limit = MAX_STORED_RESPONSE_BYTES - 'content-type'.length - 'text/plain'.length;
        await expect(
          store.completeIdempotencyKey(ref, { token: 't', response: response(limit + 1) }),
        ).rejects.toMatchObject({
          name: 'StoredResponseTooLargeError',
        });
        expect(await store.readIdempotencyKey(ref)).toMatchObject({ state: 'in_flight' });
        expect(await store.completeIdempotencyKey(ref, { token: 't', response: response(limit) })).toBe('completed');
      });
    });

    it('holds the exact budget limit for every ratio and magnitude from 1e2 to 1e9', async () => {
      const cells = BUDGET_RATIOS.flatMap((ratio) => BUDGET_MAGNITUDES.map((requests) => ({ ratio, requests })));
      const limits = await Promise.all(
        cells.map(async ({ ratio, requests }) => {
          const ref = freshRef();
          await store.recordOutcomes(ref, batch({ requests }), { budgetWindowSeconds: 10, breaker: BREAKER });
          const budget = { ratio: Number(ratio), minRetriesPerSecond: 10, windowSeconds: 10, maxAttempts: 3 };
          const read = await store.readDependency(ref, { budget, outcomeWindowSeconds: 10 });
          return `${ratio} × ${requests}: ${read.budget.limit}`;
        }),
      );
      expect(limits).toEqual(
        cells.map(({ ratio, requests }) => `${ratio} × ${requests}: ${exactBudgetLimit(ratio, 10, 10, requests)}`),
      );
    });
  });
}
