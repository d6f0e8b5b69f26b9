import { Redis } from 'ioredis';
import { LATENCY_FIELDS, ManualClock } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { MemoryStore, RedisStore, SluiceKeys } from '../src';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { describeDeadLetterBoundsConformance } from './dead-letter-bounds-conformance';
import { describeForcedListingConformance } from './forced-listing-conformance';
import { describeReporterBoundsConformance } from './reporter-bounds-conformance';
import { redisStoreUnderTest } from './redis-under-test';
import { batch, type StoreUnderTest } from './store-conformance';

const memoryStore = async (): Promise<StoreUnderTest> => {
  const clock = new ManualClock();
  return { store: new MemoryStore({ clock }), pass: async (ms) => clock.advance(ms), cleanup: async () => {} };
};

describeDeadLetterBoundsConformance('MemoryStore', memoryStore);
describeDeadLetterBoundsConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'bounds'),
);

describeForcedListingConformance('MemoryStore', memoryStore);
describeForcedListingConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'forced-listing'),
);

describeReporterBoundsConformance('MemoryStore', memoryStore);
describeReporterBoundsConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'reporter-bounds'),
);

describe('RedisStore memory per dependency', () => {
  const prefix = uniquePrefix('store-bounds');
  const keys = new SluiceKeys(prefix);
  let client: Redis;
  let store: RedisStore;
  beforeAll(() => {
    client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    store = new RedisStore({ client, keys, timeoutMs: 2000 });
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(client, prefix);
    await store.close();
  });

  it('keeps only the latency counters that are not zero', async () => {
    const ref = { namespace: 'shop', dependency: 'payments-api' };
    const latency = LATENCY_FIELDS.map((_, i) => (i === 3 ? 7 : 0));
    const policy = { budgetWindowSeconds: 10, breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, windowSeconds: 600 } };
    await store.recordOutcomes(ref, { ...batch({ requests: 7, successes: 7 }), latency }, policy);
    const stored = await client.hkeys(keys.dependency('shop', 'payments-api').latency);
    // The one counter of this second, its running total, and the window's oldest and newest second.
    expect(stored.sort()).toEqual([expect.stringMatching(/^\d+:l4$/), 'newest', 'oldest', 't:l4'].sort());
    const read = await store.readDependency(ref, {
      budget: DEFAULT_DEPENDENCY_POLICY.retryBudget,
      outcomeWindowSeconds: 600,
    });
    expect(read.latency).toEqual(latency);
  });
});
