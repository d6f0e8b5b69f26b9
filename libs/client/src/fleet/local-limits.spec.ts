import { ManualClock } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy, type DependencyPolicyOverride } from '@sluice/protocol';
import { LocalLimits } from './local-limits';

const limits = (override: DependencyPolicyOverride, share = 1) => {
  const policy = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, override);
  return new LocalLimits(
    () => policy,
    () => share,
  );
};

describe('LocalLimits (the local fallback’s rate and concurrency limits)', () => {
  const clock = new ManualClock();
  const RATE = { rateLimit: { rate: 3, periodMs: 3000, burst: 3 } };

  it('a rate limit: a burst, then one take per interval, with the exact wait', () => {
    const local = limits(RATE);
    const now = clock.now();
    expect([1, 2, 3].map(() => local.admit(now, 1))).toEqual(new Array(3).fill({ allow: true, slot: false }));
    expect(local.admit(now, 1)).toEqual({ allow: false, reason: 'rate_limited', retryAfterMs: 1000 });
    expect(local.admit(now + 1000, 1)).toEqual({ allow: true, slot: false });
  });

  it('a concurrency limit: slots held until released; the lease duration bounds the wait', () => {
    const local = limits({ concurrency: { limit: 2, leaseMs: 1500 } });
    const now = clock.now();
    expect(local.admit(now, 1)).toEqual({ allow: true, slot: true });
    expect(local.admit(now, 1)).toEqual({ allow: true, slot: true });
    expect(local.admit(now, 1)).toEqual({ allow: false, reason: 'concurrency_limited', retryAfterMs: 1500 });
    local.release(true);
    expect(local.admit(now, 1)).toMatchObject({ allow: true });
    expect(local.inFlight).toBe(2);
  });

  it('keeps this process’s share of the fleet’s limits, never below one', () => {
    const local = limits(
      { rateLimit: { rate: 10, periodMs: 1000, burst: 10 }, concurrency: { limit: 3, leaseMs: 1000 } },
      0.2,
    );
    const now = clock.now();
    // Concurrency: floor(3 × 0.2) = 0, so 1.
    expect(local.admit(now, 1)).toEqual({ allow: true, slot: true });
    expect(local.admit(now, 1)).toMatchObject({ reason: 'concurrency_limited' });
    local.release(true);
    // Rate: 2 per second, a burst of 2 (one already taken above).
    expect(local.admit(now, 1)).toMatchObject({ allow: true });
    local.release(true);
    expect(local.admit(now, 1)).toEqual({ allow: false, reason: 'rate_limited', retryAfterMs: 500 });
  });

  it('is warmed by the fleet’s grants, at most a full burst deep', () => {
    const local = limits({ ...RATE, concurrency: { limit: 5, leaseMs: 1000 } });
    const now = clock.now();
    for (let i = 0; i < 10; i++) expect(local.granted(now, 1)).toBe(true);
    expect(local.inFlight).toBe(10);
    for (let i = 0; i < 10; i++) local.release(false);
    // Ten grants used the burst up, but the cell is no deeper than one burst: one interval frees one take.
    expect(local.admit(now, 1)).toMatchObject({ allow: false, reason: 'rate_limited', retryAfterMs: 1000 });
    expect(local.admit(now + 1000, 1)).toEqual({ allow: true, slot: true });
    expect(limits(RATE).granted(now, 1)).toBe(false);
  });

  it('while attempts it admitted (with no fleet lease) run, a full local count refuses before the fleet is asked', () => {
    const local = limits({ concurrency: { limit: 2, leaseMs: 1000 } });
    const now = clock.now();
    expect(local.granted(now, 1)).toBe(true); // leased by the fleet
    expect(local.whileUnleased()).toBeUndefined();
    expect(local.admit(now, 1)).toEqual({ allow: true, slot: true }); // admitted here, in fallback
    expect(local.whileUnleased()).toEqual({ allow: false, reason: 'concurrency_limited', retryAfterMs: 1000 });
    local.release(false); // the leased one ends: the count has room again
    expect(local.whileUnleased()).toBeUndefined();
    expect(local.granted(now, 1)).toBe(true);
    expect(local.whileUnleased()).toMatchObject({ reason: 'concurrency_limited' });
    local.release(true); // the unleased one ends: the fleet knows every slot again
    expect([local.unleased, local.inFlight, local.whileUnleased()]).toEqual([0, 1, undefined]);
  });

  it('refuses nothing in shadow mode, as the fleet would not', () => {
    const local = limits({ ...RATE, concurrency: { limit: 1, leaseMs: 1000 }, mode: 'shadow' });
    const now = clock.now();
    for (let i = 0; i < 5; i++) expect(local.admit(now, 1)).toEqual({ allow: true, slot: true });
    expect(local.inFlight).toBe(5);
  });

  it('a cost above the local burst takes the whole burst instead of never passing', () => {
    const local = limits(RATE, 0.5); // burst 1 locally
    expect(local.admit(clock.now(), 3)).toEqual({ allow: true, slot: false });
    expect(local.admit(clock.now(), 1)).toMatchObject({ allow: false, reason: 'rate_limited' });
  });
});
