import { ManualClock, seededRandom, type BreakerTransition } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy, type DependencyPolicy } from '@sluice/protocol';
import { LocalGuard } from './local-guard';

const POLICY: DependencyPolicy = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, {
  retryBudget: { ratio: 0.1, minRetriesPerSecond: 0.2, windowSeconds: 10, maxAttempts: 3 },
  backoff: { baseMs: 10, capMs: 100, jitter: 'none' },
  breaker: {
    minimumCalls: 4,
    failureRateThreshold: 0.5,
    openMs: 1000,
    windowSeconds: 10,
    closeAfterSuccesses: 2,
    halfOpenProbes: 1,
  },
});

describe('LocalGuard (the local fallback)', () => {
  let clock: ManualClock;
  let transitions: BreakerTransition[];
  let guard: LocalGuard;
  const random = seededRandom(7);
  const retry = (attempt = 1, deadlineMs?: number) =>
    guard.decideRetry({ attempt, idempotent: true, deadlineMs }, clock.now(), random);

  beforeEach(() => {
    clock = new ManualClock();
    transitions = [];
    guard = new LocalGuard(
      () => POLICY,
      () => 1,
      (t) => transitions.push(t),
    );
  });

  it('grants retries up to floor(ratio × requests + floor × window), then budget_exhausted', () => {
    // floor(0.1 × 10 + 0.2 × 10) = 3
    for (let i = 0; i < 10; i++) guard.recordRequest(clock.now());
    expect([retry(), retry(), retry()].map((v) => v.reason)).toEqual(['granted', 'granted', 'granted']);
    expect(retry()).toMatchObject({ allow: false, reason: 'budget_exhausted' });
    clock.advance(10_000); // the window moves on: the retries (and requests) age out
    expect(retry().reason).toBe('granted');
  });

  it('starts the fallback from the retries the coordinator already granted this process', () => {
    // floor(0.1 × 10 + 0.2 × 10) = 3, two of which the fleet granted before the switch.
    for (let i = 0; i < 10; i++) guard.recordRequest(clock.now());
    guard.countFleetRetry(clock.now());
    guard.countFleetRetry(clock.now());
    expect(retry()).toMatchObject({ allow: true, reason: 'granted' });
    expect(retry()).toMatchObject({ allow: false, reason: 'budget_exhausted' });
    clock.advance(10_000);
    for (let i = 0; i < 10; i++) guard.recordRequest(clock.now());
    expect(retry()).toMatchObject({ allow: true, reason: 'granted' });
  });

  it('gives back the grants of retries that succeeded, under its own share of the cap', () => {
    // Share 0.5: floor 0.2 × 10 × 0.5 = 1. 10 requests: limit floor(1 + 1) = 2, cap floor(0.5 × 10 + 1) = 6.
    const half = new LocalGuard(
      () => POLICY,
      () => 0.5,
      () => undefined,
    );
    const ask = () => half.decideRetry({ attempt: 1, idempotent: true }, clock.now(), random).reason;
    for (let i = 0; i < 10; i++) half.recordRequest(clock.now());
    expect([ask(), ask(), ask()]).toEqual(['granted', 'granted', 'budget_exhausted']);
    half.countRetrySucceeded(clock.now());
    half.countRetrySucceeded(clock.now());
    expect([ask(), ask(), ask()]).toEqual(['granted', 'granted', 'budget_exhausted']);
    // However many succeed, 6 retries is this process's cap.
    for (let i = 0; i < 10; i++) half.countRetrySucceeded(clock.now());
    expect([ask(), ask(), ask()]).toEqual(['granted', 'granted', 'budget_exhausted']);
    // Both counters age out with the window.
    clock.advance(10_000);
    for (let i = 0; i < 10; i++) half.recordRequest(clock.now());
    expect([ask(), ask(), ask()]).toEqual(['granted', 'granted', 'budget_exhausted']);
  });

  it('gives nothing back under a fixed budget', () => {
    const fixed = mergeDependencyPolicy(POLICY, { retryBudget: { mode: 'fixed' } });
    const guardOf = new LocalGuard(
      () => fixed,
      () => 1,
      () => undefined,
    );
    const ask = () => guardOf.decideRetry({ attempt: 1, idempotent: true }, clock.now(), random).reason;
    for (let i = 0; i < 10; i++) guardOf.recordRequest(clock.now());
    expect([ask(), ask(), ask(), ask()]).toEqual(['granted', 'granted', 'granted', 'budget_exhausted']);
    for (let i = 0; i < 5; i++) guardOf.countRetrySucceeded(clock.now());
    expect(ask()).toBe('budget_exhausted');
  });

  it('scales the floor by the process share', () => {
    const half = new LocalGuard(
      () => POLICY,
      () => 0.5,
      () => undefined,
    );
    // floor(0 + 0.1 × 10) = 1
    expect(half.decideRetry({ attempt: 1 }, clock.now(), random).reason).toBe('granted');
    expect(half.decideRetry({ attempt: 1 }, clock.now(), random).reason).toBe('budget_exhausted');
  });

  it('refuses max_attempts and a backoff past the deadline, with the policy backoff as delay', () => {
    expect(retry(3)).toMatchObject({ allow: false, reason: 'max_attempts' });
    expect(retry(2, 15)).toMatchObject({ allow: false, reason: 'deadline_exceeded', delayMs: 20 });
    expect(retry(2, 500)).toMatchObject({ allow: true, delayMs: 20 });
  });

  it('opens on the failure rate, half-opens after openMs, lets one probe out, closes after two successes', () => {
    guard.recordOutcome(clock.now(), false, false);
    guard.recordOutcome(clock.now(), true, false);
    guard.recordOutcome(clock.now(), false, false);
    expect(guard.state(clock.now())).toBe('closed');
    guard.recordOutcome(clock.now(), true, false); // 2 of 4 failed
    expect(guard.state(clock.now())).toBe('open');
    expect(retry()).toMatchObject({ allow: false, reason: 'breaker_open' });

    clock.advance(1000);
    expect(guard.state(clock.now())).toBe('half_open');
    expect(guard.tryProbe(clock.now())).toBe(true);
    expect(guard.tryProbe(clock.now())).toBe(false);
    guard.probeOutcome(true, clock.now());
    expect(guard.tryProbe(clock.now())).toBe(true);
    guard.probeOutcome(true, clock.now());
    expect(guard.state(clock.now())).toBe('closed');
    expect(transitions.map((t) => t.to)).toEqual(['open', 'half_open', 'closed']);
  });

  it('a failed probe reopens it for longer', () => {
    for (let i = 0; i < 4; i++) guard.recordOutcome(clock.now(), true, false);
    clock.advance(1000);
    expect(guard.tryProbe(clock.now())).toBe(true);
    guard.probeOutcome(false, clock.now());
    expect(guard.state(clock.now())).toBe('open');
    clock.advance(1000);
    expect(guard.state(clock.now())).toBe('open'); // the second open lasts 2 × openMs
    clock.advance(1000);
    expect(guard.state(clock.now())).toBe('half_open');
  });

  it('successes counted within a second still weigh against failures', () => {
    for (let i = 0; i < 10; i++) guard.recordOutcome(clock.now(), false, false);
    for (let i = 0; i < 4; i++) guard.recordOutcome(clock.now(), true, false);
    expect(guard.state(clock.now())).toBe('closed'); // 4 of 14
  });

  it('takes over from the fleet: a local open the fleet saw recover is dropped, silently', () => {
    for (let i = 0; i < 4; i++) guard.recordOutcome(clock.now(), true, false);
    clock.advance(5000); // locally half-open for good: no local probe goes out while the fleet governs
    expect(guard.state(clock.now())).toBe('half_open');
    transitions.length = 0;
    guard.adopt('closed', null, clock.now());
    expect(guard.state(clock.now())).toBe('closed');
    for (let i = 0; i < 10; i++) guard.recordRequest(clock.now());
    expect(retry()).toMatchObject({ allow: true, reason: 'granted' });
    expect(transitions).toEqual([]);
    // The adopted breaker still trips on what this process sees next.
    for (let i = 0; i < 4; i++) guard.recordOutcome(clock.now(), true, false);
    expect(guard.state(clock.now())).toBe('open');
    expect(transitions.map((t) => t.to)).toEqual(['open']);
  });

  it('takes over from the fleet: an open fleet breaker stays open until its openUntil, then half-opens', () => {
    guard.adopt('open', clock.now() + 3000, clock.now());
    expect(retry()).toMatchObject({ allow: false, reason: 'breaker_open' });
    clock.advance(2999);
    expect(guard.tryProbe(clock.now())).toBe(false);
    clock.advance(1);
    expect(guard.tryProbe(clock.now())).toBe(true);
    guard.probeOutcome(false, clock.now());
    expect(guard.state(clock.now())).toBe('open');
  });

  it('takes over from the fleet: an operator’s trip holds until its end, or for good without one', () => {
    guard.adopt('forced_open', null, clock.now());
    clock.advance(3_600_000);
    expect(retry()).toMatchObject({ allow: false, reason: 'breaker_open' });
    expect(guard.tryProbe(clock.now())).toBe(false);
    guard.adopt('forced_open', clock.now() + 1000, clock.now());
    clock.advance(1000);
    expect(guard.state(clock.now())).toBe('closed');
  });

  it('reads its share of the fleet at each decision', () => {
    let share = 1;
    const shared = new LocalGuard(
      () => POLICY,
      () => share,
      () => undefined,
    );
    share = 0.25; // floor(0 + 0.2 × 0.25 × 10) = 0
    expect(shared.decideRetry({ attempt: 1 }, clock.now(), random).reason).toBe('budget_exhausted');
    share = 0.5; // floor(0.2 × 0.5 × 10) = 1
    expect(shared.decideRetry({ attempt: 1 }, clock.now(), random).reason).toBe('granted');
    expect(shared.decideRetry({ attempt: 1 }, clock.now(), random).reason).toBe('budget_exhausted');
  });
});
