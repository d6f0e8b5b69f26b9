import { ManualClock } from '@sluice/core';
import { MemoryStore } from '../src';
import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { describeConcurrencyConformance } from './concurrency-conformance';
import { redisStoresUnderTest } from './redis-under-test';

/** As many connections as coordinator instances a small fleet runs. */
const CONNECTIONS = 8;

describeConcurrencyConformance('RedisStore (standalone)', () =>
  redisStoresUnderTest({ url: SHARED_REDIS_URL }, 'concurrency', CONNECTIONS),
);

describeConcurrencyConformance('MemoryStore', async () => {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock });
  return {
    stores: Array.from({ length: CONNECTIONS }, () => store),
    pass: async (ms) => clock.advance(ms),
    cleanup: async () => store.close(),
  };
});
