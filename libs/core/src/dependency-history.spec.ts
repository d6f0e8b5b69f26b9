import type { BudgetView } from '@sluice/protocol';
import { HISTORY_STEPS, budgetUse, readHistory, recordHistory, type HistoryRing } from './dependency-history';

const BUDGET: BudgetView = { retries: 4, retriesSucceeded: 0, requests: 100, limit: 20, cap: 60, windowSeconds: 10 };
const outcomes = (failures: number) => ({ successes: 1, failures, slow: 0 });

describe('a dependency’s history ring', () => {
  it('adds a step’s reports together and keeps the last budget and state', () => {
    const ring: HistoryRing = new Map();
    recordHistory(ring, 1_700_000_001, outcomes(2), BUDGET, 'closed');
    recordHistory(ring, 1_700_000_009, outcomes(3), { ...BUDGET, retries: 9 }, 'open');
    expect(readHistory(ring, 1_700_000_009)).toEqual([
      { at: 1_700_000_000_000, successes: 2, failures: 5, slow: 0, budget: { ...BUDGET, retries: 9 }, state: 'open' },
    ]);
  });

  it('never holds more than its slots, and reads no step ahead of the clock (a step back)', () => {
    const ring: HistoryRing = new Map();
    for (let i = 0; i < 3 * HISTORY_STEPS; i++)
      recordHistory(ring, 1_700_000_000 + i * 10, outcomes(i), BUDGET, 'closed');
    expect(ring.size).toBe(HISTORY_STEPS);
    const last = 1_700_000_000 + (3 * HISTORY_STEPS - 1) * 10;
    expect(readHistory(ring, last)).toHaveLength(HISTORY_STEPS);
    // The clock stepped back a minute: the six steps after it are from no time it has reached.
    expect(readHistory(ring, last - 60)).toHaveLength(HISTORY_STEPS - 6);
  });

  it('reads budget use as the larger of net retries over the limit and retries over the cap', () => {
    expect(budgetUse(BUDGET)).toBe(0.2);
    expect(budgetUse({ ...BUDGET, retries: 30, retriesSucceeded: 25 })).toBe(0.5);
    expect(budgetUse({ ...BUDGET, limit: 0, cap: 0 })).toBe(1);
    expect(budgetUse({ ...BUDGET, retries: 0, limit: 0, cap: 0 })).toBe(0);
  });
});
