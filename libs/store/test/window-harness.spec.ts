import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { SlidingWindowCounter, retryBudgetLimit, seededRandom, type RandomSource } from '@sluice/core';
import { expandScript } from '../src/redis/scripts';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { BUDGET_MAGNITUDES, BUDGET_RATIOS, exactBudgetLimit } from './budget-reference';

/** One step of a run, as lua/window_harness.lua reads it. */
type Step =
  | ['add', second: number, windowSeconds: number, requests: number, retries: number]
  | ['sum', second: number, windowSeconds: number]
  | ['limit', ratio: number, minRetriesPerSecond: number, windowSeconds: number, requests: number];

const START = 1_767_225_600;
const WINDOWS = [1, 2, 3, 5, 10, 30, 60];

/** The same steps on libs/core: the SlidingWindowCounter and retryBudgetLimit. */
function onCore(steps: Step[]): number[] {
  const window = new SlidingWindowCounter(['requests', 'retries'] as const);
  const out: number[] = [];
  for (const step of steps) {
    if (step[0] === 'add') window.add(step[1], step[2], { requests: step[3], retries: step[4] });
    else if (step[0] === 'sum') {
      const { requests, retries } = window.sum(step[1], step[2]);
      out.push(requests, retries);
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
});
