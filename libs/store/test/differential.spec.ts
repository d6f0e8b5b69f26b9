import { ManualClock, seededRandom } from '@sluice/core';
import { MemoryStore } from '../src';
import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { expectAlike, seedsFromEnv } from './differential/differential';
import { GENERATED_OPS, generateRun } from './differential/operations';
import { redisStoreUnderTest } from './redis-under-test';

/** The seeds every CI run drives through both stores; SLUICE_DIFF_SEEDS=<n> runs seeds 1..n instead. */
const CI_SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const STEPS = 80;
/** What is not an operation on state: the connection, and subscriptions (every run subscribes to every channel). */
const NOT_DRIVEN = new Set(['kind', 'ping', 'waitUntilReady', 'close', 'subscribeDependency', 'subscribeNamespace']);

describe('MemoryStore and RedisStore answer every operation alike (seeded random runs)', () => {
  it('drives every Store operation in the CI seeds', () => {
    const store = new MemoryStore({ clock: new ManualClock() });
    const operations = Object.keys(store).filter((name) => !NOT_DRIVEN.has(name));
    expect([...GENERATED_OPS].sort()).toEqual(operations.sort());
    const generated = new Set(CI_SEEDS.flatMap((seed) => generateRun(seededRandom(seed), STEPS).map(({ op }) => op)));
    expect([...GENERATED_OPS].filter((op) => !generated.has(op))).toEqual([]);
  });

  it('on a standalone Redis', async () => {
    await expectAlike('standalone', { seeds: seedsFromEnv(CI_SEEDS), steps: STEPS, parallel: 8 }, () =>
      redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'differential'),
    );
  }, 600_000);
});
