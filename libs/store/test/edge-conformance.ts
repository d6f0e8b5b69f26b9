import { DEFAULT_DEPENDENCY_POLICY, type RateLimitPolicy } from '@sluice/protocol';
import type { DependencyRef, SluiceKeys, Store } from '../src';
import { BUDGET_MAGNITUDES, BUDGET_RATIOS, exactBudgetLimit } from './budget-reference';
import { batch, type StoreUnderTest } from './store-conformance';

const HOUR = 3_600_000;

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
