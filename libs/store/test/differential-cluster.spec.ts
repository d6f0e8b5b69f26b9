import { RedisClusterProcess } from '../../../test/support/redis-cluster';
import { expectAlike, seedsFromEnv } from './differential/differential';
import { redisStoreUnderTest } from './redis-under-test';

/** The short form on a Cluster: fewer seeds and steps than standalone (SLUICE_DIFF_SEEDS: up to 50). */
const CLUSTER_SEEDS = [101, 102, 103];

describe('MemoryStore and RedisStore answer alike on a 3-master Cluster (seeded random runs)', () => {
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
