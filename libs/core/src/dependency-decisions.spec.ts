import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import {
  admit,
  applyBreakerAction,
  createDependencyState,
  decideRetry,
  readDependencyState,
  recordOutcomes,
  releaseLease,
  renewLease,
  type AdmissionInput,
  type OutcomeBatch,
} from './index';

const NOW = 1_700_000_000_000;
const budget = { ratio: 0.1, minRetriesPerSecond: 0, windowSeconds: 10, maxAttempts: 3 };
const breaker = { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 10, minReporters: 1, windowSeconds: 10 };
const retry = { budget, delayMs: 100, latencyWindowSeconds: 10 };
const batch = (fields: Partial<OutcomeBatch>): OutcomeBatch => ({
  reporter: 'pod-1',
  requests: 0,
  successes: 0,
  failures: 0,
  slow: 0,
  probes: [],
  ...fields,
});
const admission = (fields: Partial<AdmissionInput> = {}): AdmissionInput => ({
  breaker,
  probeToken: 'probe-1',
  rateLimit: null,
  cost: 1,
  concurrency: null,
  leaseId: 'lease-1',
  ...fields,
});

describe('decideRetry', () => {
  it('grants up to ratio × requests, counting each grant, then denies budget_exhausted without counting', () => {
    const state = createDependencyState();
    recordOutcomes(state, batch({ requests: 20, successes: 20 }), { budgetWindowSeconds: 10, breaker }, NOW);
    expect(decideRetry(state, retry, NOW).budget).toEqual({
      retries: 1,
      retriesSucceeded: 0,
      requests: 20,
      limit: 2,
      cap: 10,
      windowSeconds: 10,
    });
    expect(decideRetry(state, retry, NOW).verdict).toBe('granted');
    const denied = decideRetry(state, retry, NOW);
    expect(denied).toMatchObject({ verdict: 'budget_exhausted', budget: { retries: 2 } });
  });

  it('denies deadline_exceeded when the delay plus the fleet p99 passes the deadline', () => {
    const state = createDependencyState();
    const latency = new Array(29).fill(0);
    latency[11] = 10; // the 100 ms bucket
    recordOutcomes(state, batch({ requests: 100, successes: 10, latency }), { budgetWindowSeconds: 10, breaker }, NOW);
    expect(decideRetry(state, { ...retry, deadlineMs: 150 }, NOW).verdict).toBe('deadline_exceeded');
    expect(decideRetry(state, { ...retry, deadlineMs: 250 }, NOW).verdict).toBe('granted');
  });

  it('answers a kept grant as it was, counting nothing', () => {
    const state = createDependencyState();
    const kept = {
      delayMs: 7,
      budget: { retries: 5, retriesSucceeded: 0, requests: 9, limit: 6, cap: 6, windowSeconds: 10 },
    };
    expect(decideRetry(state, retry, NOW, kept)).toMatchObject({ verdict: 'granted', ...kept });
    expect(state.budget.sum(Math.floor(NOW / 1000), 10).retries).toBe(0);
  });

  it('denies breaker_open while the breaker is open', () => {
    const state = createDependencyState();
    applyBreakerAction(state, { action: 'trip', reason: 'bad deploy' }, NOW);
    expect(decideRetry(state, retry, NOW).verdict).toBe('breaker_open');
  });
});

describe('recordOutcomes', () => {
  it('opens the breaker when the window trips, with a fresh window, and counts the reporters', () => {
    const state = createDependencyState();
    const policy = { budgetWindowSeconds: 10, breaker };
    recordOutcomes(state, batch({ reporter: 'a', successes: 5 }), policy, NOW);
    const recorded = recordOutcomes(state, batch({ reporter: 'b', failures: 5 }), policy, NOW);
    expect(recorded.reporters).toBe(2);
    expect(recorded.breaker.transitions).toEqual([{ from: 'closed', to: 'open' }]);
    expect(state.outcomes.isEmpty()).toBe(true);
  });

  it('closes a half-open breaker on a live probe lease’s success, ignoring unknown tokens', () => {
    const state = createDependencyState();
    const policy = { budgetWindowSeconds: 10, breaker: { ...breaker, closeAfterSuccesses: 1 } };
    recordOutcomes(state, batch({ failures: 10 }), policy, NOW);
    const later = NOW + breaker.openMs;
    const probe = admit(state, admission(), later);
    expect(probe.probe).toEqual({ token: 'probe-1', expiresAt: later + breaker.probeLeaseMs });
    const stranger = recordOutcomes(state, batch({ probes: [{ token: 'other', success: true }] }), policy, later);
    expect(stranger.breaker.record.state).toBe('half_open');
    const closed = recordOutcomes(state, batch({ probes: [{ token: 'probe-1', success: true }] }), policy, later);
    expect(closed.breaker.transitions).toEqual([{ from: 'half_open', to: 'closed' }]);
  });
});

describe('admit', () => {
  it('hands out at most halfOpenProbes probe leases, refusing with the time until the first expires', () => {
    const state = createDependencyState();
    recordOutcomes(state, batch({ failures: 10 }), { budgetWindowSeconds: 10, breaker }, NOW);
    const later = NOW + breaker.openMs;
    const first = admit(state, admission(), later);
    expect(first.breaker.transitions).toEqual([{ from: 'open', to: 'half_open' }]);
    expect(admit(state, admission({ probeToken: 'probe-2' }), later + 10)).toMatchObject({
      verdict: 'breaker_open',
      retryAfterMs: breaker.probeLeaseMs - 10,
    });
  });

  it('takes nothing unless every limit says yes', () => {
    const state = createDependencyState();
    const rateLimit = { rate: 1, periodMs: 1000, burst: 1 };
    const concurrency = { limit: 1, leaseMs: 5000 };
    const granted = admit(state, admission({ rateLimit, concurrency }), NOW);
    expect(granted).toMatchObject({ verdict: 'granted', lease: { id: 'lease-1' }, leasesInUse: 1 });
    expect(admit(state, admission({ rateLimit, concurrency }), NOW).verdict).toBe('rate_limited');
    const tat = state.rateTat;
    const limited = admit(state, admission({ concurrency, leaseId: 'lease-2' }), NOW + 1000);
    expect(limited).toMatchObject({ verdict: 'concurrency_limited', retryAfterMs: 4000, leasesInUse: 1 });
    expect(state.rateTat).toBe(tat);
  });

  it('answers a kept admission with its probe and lease, taking nothing', () => {
    const state = createDependencyState();
    const kept = { lease: { id: 'first', expiresAt: NOW + 1 }, leasesInUse: 1 };
    const repeat = admit(state, admission({ concurrency: { limit: 1, leaseMs: 10 } }), NOW, kept);
    expect(repeat).toMatchObject({ verdict: 'granted', lease: { id: 'first' }, retryAfterMs: 0 });
    expect(state.leases.size).toBe(0);
  });
});

describe('leases', () => {
  it('renews and releases only a live lease', () => {
    const state = createDependencyState();
    admit(state, admission({ concurrency: { limit: 2, leaseMs: 1000 } }), NOW);
    expect(renewLease(state, 'lease-1', 5000, NOW + 500)).toEqual({ expiresAt: NOW + 5500, leasesInUse: 1 });
    expect(renewLease(state, 'unknown', 5000, NOW)).toEqual({ expiresAt: null, leasesInUse: 1 });
    expect(releaseLease(state, 'lease-1', NOW + 6000)).toEqual({ released: false, leasesInUse: 0 });
  });
});

describe('applyBreakerAction and readDependencyState', () => {
  it('trips, clears the window, and reads the forced state back; an unknown dependency reads empty', () => {
    const state = createDependencyState();
    recordOutcomes(state, batch({ requests: 10, successes: 3 }), { budgetWindowSeconds: 10, breaker }, NOW);
    const tripped = applyBreakerAction(state, { action: 'trip', reason: 'r', durationMs: 1000 }, NOW);
    expect(tripped.record).toMatchObject({ state: 'forced_open', openUntil: NOW + 1000, reason: 'r' });
    const read = readDependencyState(state, { budget, outcomeWindowSeconds: 10 }, NOW + 1000);
    expect(read.breaker.transitions).toEqual([{ from: 'forced_open', to: 'closed' }]);
    expect(read.outcomes).toEqual({ successes: 0, failures: 0, slow: 0 });
    expect(read.budget).toEqual({ retries: 0, retriesSucceeded: 0, requests: 10, limit: 1, cap: 5, windowSeconds: 10 });
    const unknown = readDependencyState(undefined, { budget, outcomeWindowSeconds: 10 }, NOW);
    expect(unknown.latency).toHaveLength(29);
    expect(unknown.breaker.record.state).toBe('closed');
  });
});
