import { LATENCY_BOUNDS_MS, ManualClock } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type DependencyView } from '@sluice/protocol';
import { FleetDependency, type BreakerChange } from './fleet-dependency';

const view = (state: DependencyView['breaker']['state'], openUntil: number | null): DependencyView => ({
  namespace: 'shop',
  dependency: 'pay',
  breaker: { state, since: 0, openUntil, reason: null, failureRate: 0, slowRate: 0, calls: 0 },
  budget: { mode: 'adaptive', retries: 0, retriesSucceeded: 0, requests: 0, limit: 100, cap: 100, windowSeconds: 10 },
  reporters: 1,
  usage: { leases: 0, rateRemaining: null },
  latency: { p50: 5, p95: 40, p99: 120, count: 100 },
  policy: { ...DEFAULT_DEPENDENCY_POLICY, breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, slowCallMs: 100 } },
});

describe('FleetDependency', () => {
  const clock = new ManualClock(10_000);

  it('reads the fleet state lazily: open past openUntil is half-open, a lapsed forced state is closed', () => {
    const dep = new FleetDependency('pay', undefined, 1);
    expect(dep.fleetState(clock.now())).toBe('closed');
    dep.applyState('open', 12_000);
    expect(dep.fleetState(11_999)).toBe('open');
    expect(dep.fleetState(12_000)).toBe('half_open');
    dep.applyState('forced_open', 13_000);
    expect(dep.fleetState(12_500)).toBe('forced_open');
    expect(dep.fleetState(13_000)).toBe('closed');
    dep.applyState('forced_open', null);
    expect(dep.fleetState(99_000)).toBe('forced_open');
  });

  it('announces fleet changes only when the state changes', () => {
    const dep = new FleetDependency('pay', undefined, 1);
    const changes: BreakerChange[] = [];
    dep.changes.event((change) => changes.push(change));
    dep.applyState('closed');
    dep.applyState('open', 1);
    dep.applyState('open', 2);
    dep.applyState('closed');
    expect(changes.map((c) => `${c.from}>${c.to}:${c.source}`)).toEqual(['closed>open:fleet', 'open>closed:fleet']);
  });

  it('batches counts and a latency histogram into one report entry, and puts back an undelivered one', () => {
    const dep = new FleetDependency('pay', undefined, 1);
    dep.applyView(view('closed', null), '"e1"', clock.now());
    dep.recordRequest(clock.now());
    dep.recordOutcome(clock.now(), 3, false);
    dep.recordOutcome(clock.now(), 150, true); // slow (slowCallMs 100 from the fleet's policy) and failed
    dep.probes.push({ token: 't', success: true });
    expect(dep.takeReport(clock.now())).not.toHaveProperty('retries');
    dep.recordRequest(clock.now());
    dep.recordOutcome(clock.now(), 3, false);
    dep.recordOutcome(clock.now(), 150, true);
    dep.probes.push({ token: 't', success: true });
    dep.recordOwnRetry(clock.now());
    dep.recordOwnRetry(clock.now());
    const report = dep.takeReport(clock.now());
    expect(report).toMatchObject({
      dep: 'pay',
      requests: 1,
      successes: 1,
      failures: 1,
      slow: 1,
      retries: 2,
      probes: [{ token: 't', success: true }],
    });
    // On the coordinator's bounds (libs/core): 3 ms in the bucket up to 3, 150 ms in the one up to 150.
    expect(report.latency?.boundsMs).toEqual(LATENCY_BOUNDS_MS);
    expect(report.latency?.counts).toEqual([
      0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    expect(dep.hasPending).toBe(false);

    dep.restoreReport(report, clock.now());
    expect(dep.takeReport(clock.now())).toMatchObject({ requests: 1, successes: 1, failures: 1, slow: 1, retries: 2 });
  });

  it('feeds the local guard first attempts and plain successes in batches, each counted once', () => {
    // Budget floor 0: the local budget grants only from requests it was given (floor(0.5 × requests)).
    const dep = new FleetDependency(
      'pay',
      {
        retryBudget: { ratio: 0.5, minRetriesPerSecond: 0 },
        breaker: { minimumCalls: 4, failureRateThreshold: 0.5, slowCallMs: 100 },
      },
      1,
    );
    const retry = () => dep.local.decideRetry({ attempt: 1, idempotent: true }, clock.now(), () => 0.5).reason;
    for (let i = 0; i < 4; i++) dep.recordRequest(clock.now());
    // Not yet handed over, yet counted when the guard decides: floor(0.5 × 4) = 2 grants.
    expect([retry(), retry(), retry()]).toEqual(['granted', 'granted', 'budget_exhausted']);
    // Taken into a report, undelivered, put back: the guard does not count them again.
    const report = dep.takeReport(clock.now());
    dep.restoreReport(report, clock.now());
    expect(retry()).toBe('budget_exhausted');
    for (let i = 0; i < 2; i++) dep.recordRequest(clock.now());
    expect([retry(), retry()]).toEqual(['granted', 'budget_exhausted']);

    // Plain successes weigh against a failure although only failures reach the guard one by one:
    // 3 failures among 7 calls stay under 50 %; one more failure among 8 opens it.
    for (let i = 0; i < 4; i++) dep.recordOutcome(clock.now(), 3, false);
    for (let i = 0; i < 3; i++) dep.recordOutcome(clock.now(), 3, true);
    expect(dep.local.state(clock.now())).toBe('closed');
    dep.recordOutcome(clock.now(), 3, true);
    expect(dep.local.state(clock.now())).toBe('open');
  });

  it('the fallback policy is the fleet policy under the configured override', () => {
    const dep = new FleetDependency('pay', { breaker: { minimumCalls: 3 } }, 1);
    expect(dep.fallbackPolicy.breaker.minimumCalls).toBe(3);
    dep.applyView(view('closed', null), undefined, clock.now());
    expect(dep.fallbackPolicy.breaker).toMatchObject({ minimumCalls: 3, slowCallMs: 100 });
  });

  it('its share of the fleet is the configured one, else 1 / the reporters the coordinator counted', () => {
    const learned = new FleetDependency('pay', undefined, undefined);
    expect(learned.share).toBe(1);
    learned.fleetSize = 8;
    expect(learned.share).toBe(0.125);
    const configured = new FleetDependency('pay', undefined, 0.5);
    configured.fleetSize = 8;
    expect(configured.share).toBe(0.5);
  });

  it('the fallback starts from the fleet state last known, and from its own without one', () => {
    const dep = new FleetDependency('pay', { breaker: { minimumCalls: 2, failureRateThreshold: 0.5 } }, 1);
    dep.fallbackStarts(clock.now());
    expect(dep.local.state(clock.now())).toBe('closed');
    dep.applyState('forced_open', null);
    dep.fallbackStarts(clock.now());
    expect(dep.local.state(clock.now())).toBe('forced_open');
    dep.applyState('open', clock.now() + 500);
    dep.fallbackStarts(clock.now() + 600); // open past its openUntil: half-open
    expect(dep.local.state(clock.now() + 600)).toBe('half_open');
  });
});
