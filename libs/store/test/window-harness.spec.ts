import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  SlidingWindowCounter,
  budgetRetryAfterMs,
  retryBudgetCap,
  retryBudgetLimit,
  retryFits,
  seededRandom,
  type RandomSource,
} from '@sluice/core';
import type { BudgetMode, RetryBudgetPolicy } from '@sluice/protocol';
import { expandScript } from '../src/redis/scripts';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { BUDGET_MAGNITUDES, BUDGET_RATIOS, exactBudgetLimit } from './budget-reference';

/** One step of a run, as lua/window_harness.lua reads it. */
type Step =
  | ['add', second: number, windowSeconds: number, requests: number, retries: number, retriesSucceeded?: number]
  | ['sum', second: number, windowSeconds: number]
  | ['limit', ratio: number, minRetriesPerSecond: number, windowSeconds: number, requests: number]
  | [
      'ask',
      nowMs: number,
      mode: BudgetMode,
      ratio: number,
      maxRatio: number,
      minRetriesPerSecond: number,
      windowSeconds: number,
    ];

const START = 1_767_225_600;
const WINDOWS = [1, 2, 3, 5, 10, 30, 60];

/** The same steps on libs/core: the SlidingWindowCounter and retryBudgetLimit. */
function onCore(steps: Step[]): number[] {
  const window = new SlidingWindowCounter(['requests', 'retries', 'retriesSucceeded'] as const);
  const out: number[] = [];
  for (const step of steps) {
    if (step[0] === 'add') {
      window.add(step[1], step[2], { requests: step[3], retries: step[4], retriesSucceeded: step[5] ?? 0 });
    } else if (step[0] === 'sum') {
      const { requests, retries } = window.sum(step[1], step[2]);
      out.push(requests, retries);
    } else if (step[0] === 'ask') {
      const [, nowMs, mode, ratio, maxRatio, minRetriesPerSecond, windowSeconds] = step;
      const policy: RetryBudgetPolicy = { mode, ratio, maxRatio, minRetriesPerSecond, windowSeconds, maxAttempts: 3 };
      const second = Math.floor(nowMs / 1000);
      const { requests, retries, retriesSucceeded } = window.sum(second, windowSeconds);
      const fits = retryFits(policy, retries, requests, retriesSucceeded);
      const buckets = window.bucketsOf(second, windowSeconds).map(([at, counts]) => ({ second: at, ...counts }));
      out.push(
        retriesSucceeded,
        retryBudgetLimit(policy, requests),
        retryBudgetCap(policy, requests),
        fits ? 1 : 0,
        fits ? -1 : budgetRetryAfterMs(policy, buckets, nowMs),
      );
    } else {
      out.push(
        retryBudgetLimit(
          { ratio: step[1], minRetriesPerSecond: step[2], windowSeconds: step[3], maxAttempts: 1 },
          step[4],
        ),
      );
    }
  }
  return out;
}

/**
 * A seeded run over the window's edges: mostly small steps forward (buckets at the cutoff), windows
 * that shrink and grow, jumps far ahead (the far-behind scan), and steps back (buckets ahead of the clock).
 */
function randomRun(random: RandomSource, length: number): Step[] {
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)];
  const steps: Step[] = [];
  let second = START;
  let windowSeconds = pick(WINDOWS);
  for (let i = 0; i < length; i++) {
    const move = random();
    if (move < 0.05) second += 5 * windowSeconds + 64 + Math.floor(random() * 1000);
    else if (move < 0.1) second -= 1 + Math.floor(random() * 20);
    else second += Math.floor(random() * 3);
    if (random() < 0.15) windowSeconds = pick(WINDOWS);
    if (random() < 0.5) steps.push(['add', second, windowSeconds, Math.floor(random() * 50), Math.floor(random() * 5)]);
    else steps.push(['sum', second, windowSeconds]);
  }
  return steps;
}

describe('Lua window and budget includes against libs/core (explicit seconds)', () => {
  const prefix = uniquePrefix('window-harness');
  let client: Redis;
  let key = 0;
  const source = expandScript(readFileSync(join(__dirname, 'lua', 'window_harness.lua'), 'utf8'), 'window_harness.lua');
  const onLua = async (steps: Step[]) =>
    ((await client.eval(source, 1, `${prefix}:{w}:${++key}`, JSON.stringify(steps))) as number[]).map(Number);
  beforeAll(() => {
    client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(client, prefix);
    client.disconnect();
  });

  it('keeps a bucket until its second is the cutoff, not one second more or less', async () => {
    const steps: Step[] = [
      ['add', START, 10, 7, 1],
      ['sum', START + 9, 10],
      ['sum', START + 10, 10],
      ['add', START + 20, 10, 3, 0],
      ['sum', START + 29, 10],
      ['sum', START + 30, 10],
    ];
    expect(await onLua(steps)).toEqual([7, 1, 0, 0, 3, 0, 0, 0]);
    expect(onCore(steps)).toEqual([7, 1, 0, 0, 3, 0, 0, 0]);
  });

  it('drops what a window that shrank far behind no longer holds (the far-behind scan)', async () => {
    const steps: Step[] = [
      ['add', START, 600, 5, 0],
      ['add', START + 500, 600, 11, 2],
      ['sum', START + 5000, 1],
      ['add', START + 5000, 1, 1, 0],
      ['sum', START + 5000, 600],
    ];
    expect(await onLua(steps)).toEqual([0, 0, 1, 0]);
    expect(onCore(steps)).toEqual([0, 0, 1, 0]);
  });

  it('ignores and drops buckets ahead of the clock (a step back)', async () => {
    const steps: Step[] = [
      ['add', START + 100, 10, 9, 1],
      ['add', START, 10, 2, 0],
      ['sum', START, 10],
      ['sum', START + 100, 10],
    ];
    expect(await onLua(steps)).toEqual([2, 0, 0, 0]);
    expect(onCore(steps)).toEqual([2, 0, 0, 0]);
  });

  it('answers as libs/core on 200 seeded random runs (edges, shrinking, far behind, steps back)', async () => {
    const differing: number[] = [];
    for (let seed = 1; seed <= 200; seed++) {
      const steps = randomRun(seededRandom(seed), 60);
      if (JSON.stringify(await onLua(steps)) !== JSON.stringify(onCore(steps))) differing.push(seed);
    }
    expect(differing).toEqual([]);
  });

  it('computes the exact budget limit for every ratio and magnitude from 1e2 to 1e9, as libs/core does', async () => {
    const cells = BUDGET_RATIOS.flatMap((ratio) => BUDGET_MAGNITUDES.map((requests) => ({ ratio, requests })));
    const steps: Step[] = cells.map(({ ratio, requests }) => ['limit', Number(ratio), 10, 10, requests]);
    const exact = cells.map(({ ratio, requests }) => exactBudgetLimit(ratio, 10, 10, requests));
    expect(await onLua(steps)).toEqual(exact);
    expect(onCore(steps)).toEqual(exact);
  });

  describe('adaptive budgets (includes/budget.lua and retry_after.lua against libs/core)', () => {
    const S = START;
    /** An ask at `nowMs`: [retriesSucceeded, limit, cap, fits, retryAfterMs]. */
    const ask = (
      nowMs: number,
      mode: BudgetMode,
      ratio: number,
      maxRatio: number,
      floor: number,
      window = 10,
    ): Step => ['ask', nowMs, mode, ratio, maxRatio, floor, window];
    const both = async (steps: Step[], expected: number[]) => {
      expect(await onLua(steps)).toEqual(expected);
      expect(onCore(steps)).toEqual(expected);
    };

    it('gives back the grant of each retry that succeeded; fixed counts every retry', async () => {
      // 100 requests, ratio 0.1, no floor: limit 10; maxRatio 0.5: cap 50.
      const window: Step[] = [['add', S, 10, 100, 14, 4]];
      // 14 retries, 4 succeeded: 10 net, at the limit.
      await both([...window, ask(S * 1000, 'adaptive', 0.1, 0.5, 0)], [4, 10, 50, 0, 10_000]);
      await both([...window, ['add', S, 10, 0, 0, 1], ask(S * 1000, 'adaptive', 0.1, 0.5, 0)], [5, 10, 50, 1, -1]);
      // Fixed: the successes change nothing, and the cap is the limit.
      await both([...window, ['add', S, 10, 0, 0, 100], ask(S * 1000, 'fixed', 0.1, 0.5, 0)], [104, 10, 10, 0, 10_000]);
    });

    it('answers as fixed when no retry succeeded', async () => {
      const steps: Step[] = [['add', S, 10, 100, 9], ask(S * 1000 + 5, 'adaptive', 0.1, 0.5, 0)];
      await both(steps, [0, 10, 50, 1, -1]);
      await both([['add', S, 10, 100, 10], ask(S * 1000 + 5, 'adaptive', 0.1, 0.5, 0)], [0, 10, 50, 0, 10_000]);
    });

    it('stops at the cap however many succeed, until the retries that fill it leave the window', async () => {
      // Floor 0.5 × 10 = 5: limit floor(10 + 5) = 15, cap floor(20 + 5) = 25 (maxRatio 0.2).
      const steps: Step[] = [
        ['add', S, 10, 100, 15],
        ['add', S + 1, 10, 0, 0, 15],
        ['add', S + 2, 10, 0, 10],
        ['add', S + 3, 10, 0, 0, 10],
        // 25 retries, 25 succeeded: 0 net, but 25 is the cap. At S + 10 the requests leave (cap 5,
        // 10 retries); at S + 11 still 10 retries; at S + 12 none: the ask fits again.
        ask((S + 5) * 1000 + 250, 'adaptive', 0.1, 0.2, 0.5),
      ];
      await both(steps, [25, 15, 25, 0, 6750]);
    });

    it('waits for a later second when a second leaving the window takes more successes than retries', async () => {
      // Floor 1 × 10: limit floor(0.1 × 100 + 10) = 20, cap 60. S: 5 retries and 10 successes (5 of
      // them for retries that left already); S + 1: 100 requests, 20 retries; S + 2: 5 retries.
      // Now 30 retries, 10 succeeded: 20 net, at the limit. When S leaves (S + 10), 25 retries and
      // none succeeded: 25 net, still over (the retries alone leaving would fit: 15 net). When S + 1
      // leaves (S + 11), 5 retries, no requests: limit 10, cap 10: it fits.
      const steps: Step[] = [
        ['add', S, 10, 0, 5, 10],
        ['add', S + 1, 10, 100, 20],
        ['add', S + 2, 10, 0, 5],
        ask((S + 3) * 1000 + 400, 'adaptive', 0.1, 0.5, 1),
      ];
      await both(steps, [10, 20, 60, 0, 7600]);
    });

    it('counts retries − retriesSucceeded as 0, never below', async () => {
      // ratio 0.01 × 10 requests: limit 0, cap 5. 5 successes and no retry: 0 net, not −5: nothing fits.
      await both([['add', S, 10, 10, 0, 5], ask(S * 1000, 'adaptive', 0.01, 0.5, 0)], [5, 0, 5, 0, 10_000]);
    });

    it('answers as libs/core on 300 seeded random windows, asked in both modes', async () => {
      const differing: number[] = [];
      for (let seed = 1; seed <= 300; seed++) {
        const random = seededRandom(seed);
        const int = (n: number) => Math.floor(random() * n);
        const windowSeconds = [1, 2, 3, 5, 10][int(5)];
        const steps: Step[] = [];
        let second = START;
        for (let i = 0; i < 12; i++) {
          second += int(3);
          steps.push(['add', second, windowSeconds, int(3) === 0 ? int(200) : 0, int(30), int(30)]);
        }
        const ratio = [0, 0.01, 0.1, 0.29, 0.5][int(5)];
        const maxRatio = ratio + [0, 0.07, 0.3, 0.5][int(4)];
        const floor = [0, 0.5, 1, 3][int(4)];
        const nowMs = second * 1000 + int(1000);
        steps.push(ask(nowMs, 'adaptive', ratio, maxRatio, floor, windowSeconds));
        steps.push(ask(nowMs, 'fixed', ratio, maxRatio, floor, windowSeconds));
        if (JSON.stringify(await onLua(steps)) !== JSON.stringify(onCore(steps))) differing.push(seed);
      }
      expect(differing).toEqual([]);
    });
  });
});
