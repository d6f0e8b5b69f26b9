import { ManualClock } from '@sluice/core';
import { MemoryStore } from '../src';
import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { describeDeadLetterBoundsConformance } from './dead-letter-bounds-conformance';
import { describeForcedListingConformance } from './forced-listing-conformance';
import { redisStoreUnderTest } from './redis-under-test';
import type { StoreUnderTest } from './store-conformance';

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
