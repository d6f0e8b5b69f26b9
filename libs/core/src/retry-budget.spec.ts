import type { RetryBudgetPolicy } from '@sluice/protocol';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { retryBudgetLimit, retryFits } from './retry-budget';

function budget(ratio: number, minRetriesPerSecond = 0, windowSeconds = 10, maxAttempts = 3): RetryBudgetPolicy {
  return { ratio, minRetriesPerSecond, windowSeconds, maxAttempts };
}

/** floor(m / d) for non-negative integers, in exact integer arithmetic. */
function intFloorDiv(m: number, d: number): number {
  return (m - (m % d)) / d;
}

describe('retryBudgetLimit', () => {
  it('matches the example in the API (default policy, 240 requests → 124)', () => {
    expect(retryBudgetLimit(DEFAULT_DEPENDENCY_POLICY.retryBudget, 240)).toBe(124);
  });

  it('is minRetriesPerSecond × windowSeconds with no requests', () => {
    expect(retryBudgetLimit(budget(0.1, 10, 10), 0)).toBe(100);
    expect(retryBudgetLimit(budget(0.5, 2, 5), 0)).toBe(10);
    expect(retryBudgetLimit(budget(0.5, 3, 1), 0)).toBe(3);
    expect(retryBudgetLimit(budget(0.5, 0, 60), 0)).toBe(0);
  });

  it('scales the floor with the window length', () => {
    expect(retryBudgetLimit(budget(0, 10, 1), 0)).toBe(10);
    expect(retryBudgetLimit(budget(0, 10, 30), 0)).toBe(300);
  });

  it.each([
    // [ratio, requests, expected ratio part]
    [0.29, 100, 29],
    [0.1, 1000, 100],
    [0.7, 10, 7],
    [0.57, 100, 57],
    [0.58, 100, 58],
    [0.3, 10, 3],
    [0.6, 10, 6],
    [0.35, 20, 7],
    [0.1, 30, 3],
    [0.14, 50, 7],
    [0.07, 100, 7],
    [0.01, 100, 1],
    [1, 12345, 12345],
  ])('does not lose a unit to binary fractions: %p × %p = %p', (ratio, requests, expected) => {
    expect(retryBudgetLimit(budget(ratio, 0), requests)).toBe(expected);
    expect(retryBudgetLimit(budget(ratio, 10, 10), requests)).toBe(expected + 100);
    expect(retryBudgetLimit(budget(ratio, 3, 7), requests)).toBe(expected + 21);
  });

  it.each([
    [0.1, 9, 0],
    [0.1, 15, 1],
    [0.1, 19, 1],
    [0.25, 3, 0],
    [0.25, 7, 1],
    [0.5, 1, 0],
    [0.99, 100, 99],
    [0.999, 999, 998],
  ])('floors fractional results rather than rounding: %p × %p → %p', (ratio, requests, expected) => {
    expect(retryBudgetLimit(budget(ratio, 0), requests)).toBe(expected);
  });

  it('floors the sum, not each term separately', () => {
    // 0.1 × 5 = 0.5 and 0.5 × 1 = 0.5: the sum is exactly 1.
    expect(retryBudgetLimit(budget(0.1, 0.5, 1), 5)).toBe(1);
    // 0.3 × 5 = 1.5 and 0.25 × 2 = 0.5: 2, not 1 + 0.
    expect(retryBudgetLimit(budget(0.3, 0.25, 2), 5)).toBe(2);
  });

  it('returns a whole number', () => {
    for (const requests of [0, 1, 3, 7, 11, 99, 101, 1001]) {
      const limit = retryBudgetLimit(budget(0.33, 1.5, 3), requests);
      expect(Number.isInteger(limit)).toBe(true);
    }
  });

  it('is non-decreasing in requests', () => {
    const policy = budget(0.29, 1, 10);
    let previous = retryBudgetLimit(policy, 0);
    for (let requests = 1; requests <= 2000; requests++) {
      const limit = retryBudgetLimit(policy, requests);
      expect(limit).toBeGreaterThanOrEqual(previous);
      previous = limit;
    }
  });

  it('agrees with exact integer arithmetic for every percentage ratio over a range of requests', () => {
    const mismatches: string[] = [];
    for (let percent = 0; percent <= 100; percent++) {
      const ratio = percent / 100;
      for (let requests = 0; requests <= 1000; requests++) {
        for (const [minRetriesPerSecond, windowSeconds] of [
          [0, 10],
          [10, 10],
          [3, 7],
        ]) {
          const expected = intFloorDiv(percent * requests, 100) + minRetriesPerSecond * windowSeconds;
          const actual = retryBudgetLimit(budget(ratio, minRetriesPerSecond, windowSeconds), requests);
          if (actual !== expected) mismatches.push(`${ratio}×${requests}+${minRetriesPerSecond}×${windowSeconds}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('agrees with exact integer arithmetic for per-mille ratios and large request counts', () => {
    const mismatches: string[] = [];
    for (let perMille = 1; perMille <= 1000; perMille += 7) {
      const ratio = perMille / 1000;
      for (const requests of [1_000, 10_000, 123_456, 1_000_000, 9_999_999, 10_000_000]) {
        const expected = intFloorDiv(perMille * requests, 1000) + 100;
        const actual = retryBudgetLimit(budget(ratio, 10, 10), requests);
        if (actual !== expected) mismatches.push(`${ratio}×${requests}`);
      }
    }
    expect(mismatches).toEqual([]);
  });
});

describe('retryFits', () => {
  it('allows a retry while retries + 1 ≤ limit, at the exact boundary', () => {
    const policy = DEFAULT_DEPENDENCY_POLICY.retryBudget; // 240 requests → limit 124
    expect(retryFits(policy, 0, 240)).toBe(true);
    expect(retryFits(policy, 122, 240)).toBe(true);
    expect(retryFits(policy, 123, 240)).toBe(true);
    expect(retryFits(policy, 124, 240)).toBe(false);
    expect(retryFits(policy, 125, 240)).toBe(false);
  });

  it('uses the binary-fraction-safe limit (0.29 × 100 → 29)', () => {
    const policy = budget(0.29, 0);
    expect(retryFits(policy, 28, 100)).toBe(true);
    expect(retryFits(policy, 29, 100)).toBe(false);
  });

  it('denies every retry when the limit is zero', () => {
    const policy = budget(0, 0);
    expect(retryFits(policy, 0, 0)).toBe(false);
    expect(retryFits(policy, 0, 1_000_000)).toBe(false);
  });

  it('a fractional limit does not admit a partial retry', () => {
    const policy = budget(0.1, 0); // 0.1 × 15 = 1.5 → limit 1
    expect(retryFits(policy, 0, 15)).toBe(true);
    expect(retryFits(policy, 1, 15)).toBe(false);
  });

  it('grows with requests: more traffic makes room for another retry', () => {
    const policy = budget(0.1, 0);
    expect(retryFits(policy, 2, 29)).toBe(false);
    expect(retryFits(policy, 2, 30)).toBe(true);
  });

  it('agrees with retryBudgetLimit everywhere', () => {
    const policy = budget(0.29, 2, 5);
    for (let requests = 0; requests <= 300; requests += 3) {
      const limit = retryBudgetLimit(policy, requests);
      for (let retries = Math.max(0, limit - 3); retries <= limit + 3; retries++) {
        expect(retryFits(policy, retries, requests)).toBe(retries + 1 <= limit);
      }
    }
  });
});
