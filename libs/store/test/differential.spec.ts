import { ManualClock, seededRandom } from '@sluice/core';
import { MemoryStore } from '../src';
import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { RedisClusterProcess } from '../../../test/support/redis-cluster';
import { runDifferential, seedsFromEnv, type DifferentialOptions } from './differential/differential';
import { GENERATED_OPS, generateRun } from './differential/operations';
import { redisStoreUnderTest } from './redis-under-test';
import type { StoreUnderTest } from './store-conformance';

/** The seeds every CI run drives through both stores; SLUICE_DIFF_SEEDS=<n> runs seeds 1..n instead. */
const CI_SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const CLUSTER_SEEDS = [101, 102, 103];
const STEPS = 80;
/** What is not an operation on state: the connection, and subscriptions (every run subscribes to every channel). */
const NOT_DRIVEN = new Set(['kind', 'ping', 'waitUntilReady', 'close', 'subscribeDependency', 'subscribeNamespace']);

/** Runs the seeds; a long run (SLUICE_DIFF_SEEDS) says how many calls it compared. */
async function expectAlike(label: string, options: DifferentialOptions, open: () => Promise<StoreUnderTest>) {
  const { failures, calls, spanned, atExpiry } = await runDifferential(options, open);
  if (process.env.SLUICE_DIFF_SEEDS) {
    process.stdout.write(
      `differential (${label}): ${options.seeds.length} seeds, ${calls} calls compared; ${spanned} read a time ` +
        `spanning a millisecond, ${atExpiry} met a key at its expiry instant\n`,
    );
  }
  expect(failures).toEqual([]);
}

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

  describe('on a 3-master Cluster', () => {
    let cluster: RedisClusterProcess;
    beforeAll(async () => {
      cluster = await RedisClusterProcess.start();
    }, 60_000);
    afterAll(() => cluster?.cleanup());

    it('a short form', async () => {
      const seeds = process.env.SLUICE_DIFF_SEEDS ? seedsFromEnv([]).slice(0, 50) : CLUSTER_SEEDS;
      await expectAlike('Cluster', { seeds, steps: 60, parallel: 4 }, () =>
        redisStoreUnderTest({ clusterNodes: cluster.nodes }, 'differential'),
      );
    }, 600_000);
  });
});
