import { DEFAULT_DEPENDENCY_POLICY, type BreakerPolicy } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy, Store, StoreEvent } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

const BREAKER: BreakerPolicy = {
  ...DEFAULT_DEPENDENCY_POLICY.breaker,
  minimumCalls: 10,
  openMs: 300,
  maxOpenMs: 1000,
  halfOpenProbes: 1,
  closeAfterSuccesses: 2,
  probeLeaseMs: 300,
};
const BUDGET = DEFAULT_DEPENDENCY_POLICY.retryBudget;

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: 'breakers', dependency: `dep-${++sequence}` });
let tokens = 0;
const token = () => `probe-${++tokens}`;

/**
 * The breaker scenarios every Store must pass alike. Open durations are a few hundred ms so the
 * Redis runs (on Redis's own clock) stay short; on MemoryStore time is a fake clock.
 */
export function describeBreakerConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Breaker conformance: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    const policy = (overrides: Partial<BreakerPolicy> = {}): OutcomePolicy => ({
      budgetWindowSeconds: 10,
      breaker: { ...BREAKER, ...overrides },
    });
    const admit = (ref: DependencyRef, overrides: Partial<BreakerPolicy> = {}, requestId?: string) =>
      store.admit(ref, {
        breaker: { ...BREAKER, ...overrides },
        probeToken: token(),
        rateLimit: null,
        cost: 1,
        concurrency: null,
        leaseId: token(),
        ...(requestId !== undefined ? { requestId } : {}),
      });
    /** Records a batch; the breaker after it. */
    const breakerAfter = async (...args: Parameters<Store['recordOutcomes']>) =>
      (await store.recordOutcomes(...args)).breaker;
    const retry = (ref: DependencyRef) => store.decideRetry(ref, { budget: BUDGET, delayMs: 0 });
    const read = (ref: DependencyRef) => store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });

    /** Opens a fresh breaker with 10 failures out of 10 calls. */
    async function openedBreaker(overrides: Partial<BreakerPolicy> = {}): Promise<DependencyRef> {
      const ref = freshRef();
      const result = await breakerAfter(ref, batch({ requests: 10, failures: 10 }), policy(overrides));
      expect(result.record.state).toBe('open');
      return ref;
    }

    /** An opened breaker, half-open once its open duration has passed. */
    async function halfOpenBreaker(overrides: Partial<BreakerPolicy> = {}): Promise<DependencyRef> {
      const ref = await openedBreaker(overrides);
      await subject.pass(350);
      return ref;
    }

    it('respects minimumCalls, then opens on the failure rate', async () => {
      const ref = freshRef();
      const below = await breakerAfter(ref, batch({ requests: 9, failures: 9 }), policy());
      expect(below).toEqual({ record: expect.objectContaining({ state: 'closed' }), transitions: [] });
      const opened = await breakerAfter(ref, batch({ requests: 2, successes: 1, failures: 1 }), policy());
      expect(opened.transitions).toEqual([{ from: 'closed', to: 'open' }]);
      expect(opened.record.state).toBe('open');
      expect(opened.record.openUntil! - opened.record.since!).toBe(300);
    });

    it('stays closed while the failure rate is under the threshold', async () => {
      const ref = freshRef();
      const result = await breakerAfter(ref, batch({ requests: 100, successes: 51, failures: 49 }), policy());
      expect(result.record.state).toBe('closed');
      expect((await read(ref)).outcomes).toEqual({ successes: 51, failures: 49, slow: 0 });
    });

    it('opens on the slow-call rate', async () => {
      const ref = freshRef();
      const calm = await breakerAfter(ref, batch({ successes: 10, slow: 4 }), policy({ slowCallRateThreshold: 0.5 }));
      expect(calm.record.state).toBe('closed');
      const slow = await breakerAfter(ref, batch({ successes: 10, slow: 8 }), policy({ slowCallRateThreshold: 0.5 }));
      expect(slow.transitions).toEqual([{ from: 'closed', to: 'open' }]);
    });

    it('needs minReporters distinct reporters seeing failures before it opens', async () => {
      const ref = freshRef();
      const quorum = policy({ minReporters: 2 });
      const onePod = await breakerAfter(ref, batch({ requests: 50, failures: 50 }, 'sick-pod'), quorum);
      expect(onePod.record.state).toBe('closed');
      const healthy = await breakerAfter(ref, batch({ requests: 5, successes: 5 }, 'healthy-pod'), quorum);
      expect(healthy.record.state).toBe('closed');
      const second = await breakerAfter(ref, batch({ requests: 1, failures: 1 }, 'other-pod'), quorum);
      expect(second.transitions).toEqual([{ from: 'closed', to: 'open' }]);
    });

    it('refuses retries and calls while open, with the time left', async () => {
      const ref = await openedBreaker();
      expect((await retry(ref)).verdict).toBe('breaker_open');
      const denied = await admit(ref);
      expect(denied.verdict).toBe('breaker_open');
      expect(denied.probe).toBeUndefined();
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(300);
      expect((await read(ref)).budget.retries).toBe(0);
    });

    it('half-opens after openMs and hands out exactly halfOpenProbes probe leases', async () => {
      const ref = await halfOpenBreaker();
      const probe = await admit(ref);
      expect(probe.verdict).toBe('granted');
      expect(probe.probe?.token).toEqual(expect.any(String));
      expect(probe.breaker.transitions).toEqual([{ from: 'open', to: 'half_open' }]);
      const second = await admit(ref);
      expect(second).toMatchObject({ verdict: 'breaker_open', breaker: { record: { state: 'half_open' } } });
      expect(second.retryAfterMs).toBeGreaterThan(0);
      expect((await retry(ref)).verdict).toBe('breaker_open');

      const three = await halfOpenBreaker({ halfOpenProbes: 3 });
      const answers = await Promise.all(Array.from({ length: 10 }, () => admit(three, { halfOpenProbes: 3 })));
      expect(answers.filter((answer) => answer.probe)).toHaveLength(3);
    });

    it('answers a repeat of the half-open probe with the same probe token, handing out no second probe', async () => {
      const ref = await halfOpenBreaker();
      const probe = await admit(ref, {}, 'probe-call');
      expect(probe.probe).toEqual({ token: expect.any(String), expiresAt: expect.any(Number) });
      const repeat = await admit(ref, {}, 'probe-call');
      expect(repeat).toMatchObject({
        verdict: 'granted',
        probe: probe.probe,
        breaker: { record: { state: 'half_open' } },
      });
      expect((await admit(ref, {}, 'another-call')).verdict).toBe('breaker_open');
      // The repeated token is the probe's: its outcome closes the breaker.
      const closed = await breakerAfter(
        ref,
        { ...batch({ successes: 1 }), probes: [{ token: repeat.probe!.token, success: true }] },
        policy({ closeAfterSuccesses: 1 }),
      );
      expect(closed.transitions).toEqual([{ from: 'half_open', to: 'closed' }]);
    });

    it('closes after closeAfterSuccesses probe successes, with a fresh window', async () => {
      const ref = await halfOpenBreaker();
      const first = await admit(ref);
      const afterOne = await breakerAfter(
        ref,
        { ...batch({ successes: 1 }), probes: [{ token: first.probe!.token, success: true }] },
        policy(),
      );
      expect(afterOne.record.state).toBe('half_open');
      const second = await admit(ref);
      expect(second.probe).toBeDefined();
      const closed = await breakerAfter(
        ref,
        { ...batch({ successes: 1 }), probes: [{ token: second.probe!.token, success: true }] },
        policy(),
      );
      expect(closed.transitions).toEqual([{ from: 'half_open', to: 'closed' }]);
      expect((await read(ref)).outcomes).toEqual({ successes: 0, failures: 0, slow: 0 });
      expect((await admit(ref)).verdict).toBe('granted');
      expect((await retry(ref)).verdict).toBe('granted');
    });

    it('reopens on a probe failure for twice as long, capped at maxOpenMs', async () => {
      const ref = await halfOpenBreaker();
      const probe = await admit(ref);
      const reopened = await breakerAfter(
        ref,
        { ...batch({ failures: 1 }), probes: [{ token: probe.probe!.token, success: false }] },
        policy(),
      );
      expect(reopened.transitions).toEqual([{ from: 'half_open', to: 'open' }]);
      expect(reopened.record.openUntil! - reopened.record.since!).toBe(600);
      await subject.pass(650);
      const again = await admit(ref);
      const capped = await breakerAfter(
        ref,
        { ...batch({}), probes: [{ token: again.probe!.token, success: false }] },
        policy(),
      );
      expect(capped.record.openUntil! - capped.record.since!).toBe(1000);
    });

    it('gives the probe to the next caller once an unanswered lease expires, and ignores the late outcome', async () => {
      const ref = await halfOpenBreaker();
      const lost = await admit(ref);
      expect(lost.probe).toBeDefined();
      expect((await admit(ref)).probe).toBeUndefined();
      await subject.pass(350);
      const next = await admit(ref);
      expect(next.probe).toBeDefined();
      const late = await breakerAfter(
        ref,
        { ...batch({}), probes: [{ token: lost.probe!.token, success: false }] },
        policy(),
      );
      expect(late.record.state).toBe('half_open');
    });

    it('trips fleet-wide until reset, and a tripped breaker with a duration lapses to closed', async () => {
      const ref = freshRef();
      const tripped = await store.setBreaker(ref, { action: 'trip', reason: 'bad deploy' });
      expect(tripped.transitions).toEqual([{ from: 'closed', to: 'forced_open' }]);
      expect(tripped.record).toMatchObject({ state: 'forced_open', openUntil: null, reason: 'bad deploy' });
      expect((await retry(ref)).verdict).toBe('breaker_open');
      expect(await admit(ref)).toMatchObject({ verdict: 'breaker_open', retryAfterMs: null });
      const reset = await store.setBreaker(ref, { action: 'reset' });
      expect(reset.transitions).toEqual([{ from: 'forced_open', to: 'closed' }]);
      expect((await admit(ref)).verdict).toBe('granted');

      const timed = await store.setBreaker(ref, { action: 'trip', reason: 'maintenance', durationMs: 300 });
      expect(timed.record.openUntil! - timed.record.since!).toBe(300);
      await subject.pass(350);
      const lapsed = await read(ref);
      expect(lapsed.breaker.record.state).toBe('closed');
      expect(lapsed.breaker.transitions).toEqual([{ from: 'forced_open', to: 'closed' }]);
    });

    it('forgets the end and the reason of a state it leaves', async () => {
      const ref = freshRef();
      await store.setBreaker(ref, { action: 'force_close', reason: 'canary is fine', durationMs: 60_000 });
      const tripped = await store.setBreaker(ref, { action: 'trip', reason: 'until reset' });
      expect(tripped.record).toMatchObject({ state: 'forced_open', openUntil: null, reason: 'until reset' });
      expect((await read(ref)).breaker.record).toMatchObject({
        state: 'forced_open',
        openUntil: null,
        reason: 'until reset',
      });
      await store.setBreaker(ref, { action: 'reset' });
      expect((await read(ref)).breaker.record).toMatchObject({ state: 'closed', openUntil: null, reason: null });

      const halfOpen = await halfOpenBreaker();
      const settled = await read(halfOpen);
      expect(settled.breaker.record).toMatchObject({ state: 'half_open', openUntil: null });
    });

    it('stays forced closed whatever the window says, until reset', async () => {
      const ref = freshRef();
      await store.setBreaker(ref, { action: 'force_close', reason: 'known flaky, keep calling' });
      const result = await breakerAfter(ref, batch({ requests: 50, failures: 50 }), policy());
      expect(result.record.state).toBe('forced_closed');
      expect((await retry(ref)).verdict).toBe('granted');
      await store.setBreaker(ref, { action: 'reset' });
      const opened = await breakerAfter(ref, batch({ requests: 10, failures: 10 }), policy());
      expect(opened.record.state).toBe('open');
    });

    it('publishes every transition (with the operator\u2019s reason) on the dependency channel, and new dependencies on the namespace channel', async () => {
      const ref = freshRef();
      const events: StoreEvent[] = [];
      const stopDependency = await store.subscribeDependency(ref, (event) => events.push(event));
      const stopNamespace = await store.subscribeNamespace(ref.namespace, (event) => events.push(event));
      await store.registerDependency(ref, { cap: 1000, retentionMs: 60_000 });
      await store.recordOutcomes(ref, batch({ requests: 10, failures: 10 }), policy());
      await store.setBreaker(ref, { action: 'trip', reason: 'drill' });
      await store.setBreaker(ref, { action: 'trip', reason: 'drill again' });
      const deadline = Date.now() + 2000;
      while (events.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await stopDependency();
      await stopNamespace();
      expect(events).toEqual([
        { type: 'dependency', dep: ref.dependency },
        expect.objectContaining({
          type: 'breaker',
          dep: ref.dependency,
          from: 'closed',
          state: 'open',
          openUntil: expect.any(Number),
          reason: null,
        }),
        expect.objectContaining({
          type: 'breaker',
          from: 'open',
          state: 'forced_open',
          openUntil: null,
          reason: 'drill',
        }),
        expect.objectContaining({ type: 'breaker', from: 'forced_open', state: 'forced_open', reason: 'drill again' }),
      ]);
    });
  });
}
