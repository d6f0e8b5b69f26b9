import { ManualClock } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { MemoryStore, type DependencyRef, type ForcedBreakerState, type RedisStore, type Store } from '../src';
import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { redisStoreUnderTest } from './redis-under-test';
import type { StoreUnderTest } from './store-conformance';

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: `resets-${++sequence}`, dependency: 'payments-api' });
const READ = { budget: DEFAULT_DEPENDENCY_POLICY.retryBudget, outcomeWindowSeconds: 10 };

/** What outlives a store reset, in every Store alike: re-asserting an operator's forced state. */
function describeResetConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Store resets: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    /** The store's clock now: when a scratch breaker is reset. */
    const storeNow = async () => (await store.setBreaker(freshRef(), { action: 'reset' })).record.since!;
    const forcedAt = (since: number, openUntil: number | null): ForcedBreakerState => ({
      state: 'forced_open',
      since,
      openUntil,
      reason: 'bad deploy',
    });
    const recordOf = async (ref: DependencyRef) => (await store.readDependency(ref, READ)).breaker.record;

    it('reads the same epoch of every shard until a shard loses it', async () => {
      const first = await store.readStoreEpochs('candidate-1');
      expect(first.length).toBeGreaterThan(0);
      expect(await store.readStoreEpochs('candidate-2')).toEqual(first.map((shard) => ({ ...shard, created: false })));
    });

    it('asserts a forced state the store lost, with its own since, expiry and reason, once', async () => {
      const ref = freshRef();
      const now = await storeNow();
      const forced = forcedAt(now - 1000, now + 600_000);
      const first = await store.reassertBreaker(ref, forced);
      expect(first.applied).toBe(true);
      expect(await recordOf(ref)).toMatchObject({ state: 'forced_open', since: now - 1000, openUntil: now + 600_000 });
      expect((await recordOf(ref)).reason).toBe('bad deploy');
      // Another instance asking again changes nothing.
      expect((await store.reassertBreaker(ref, forced)).applied).toBe(false);
    });

    it('leaves a breaker reset since, a later trip and a lapsed state alone', async () => {
      const now = await storeNow();
      const reset = freshRef();
      await store.setBreaker(reset, { action: 'trip', reason: 'bad deploy' });
      await store.setBreaker(reset, { action: 'reset' });
      expect((await store.reassertBreaker(reset, forcedAt(now - 1000, null))).applied).toBe(false);
      expect((await recordOf(reset)).state).toBe('closed');

      const retripped = freshRef();
      await store.setBreaker(retripped, { action: 'force_close', reason: 'newer' });
      expect((await store.reassertBreaker(retripped, forcedAt(now - 1000, null))).applied).toBe(false);
      expect((await recordOf(retripped)).state).toBe('forced_closed');

      const lapsed = freshRef();
      expect((await store.reassertBreaker(lapsed, forcedAt(now - 10_000, now - 1000))).applied).toBe(false);
      expect((await recordOf(lapsed)).state).toBe('closed');
    });
  });
}

describeResetConformance('MemoryStore', async () => {
  const clock = new ManualClock();
  return { store: new MemoryStore({ clock }), pass: async (ms) => clock.advance(ms), cleanup: async () => {} };
});
describeResetConformance('RedisStore (standalone)', () => redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'resets'));

describe('RedisStore epochs: a shard that lost its marker', () => {
  let subject: StoreUnderTest;
  beforeAll(async () => {
    subject = await redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'epochs');
  });
  afterAll(() => subject.cleanup());

  it('gets a new epoch, set by the first reader, which every later reader sees', async () => {
    const store = subject.store as RedisStore;
    const [before] = await store.readStoreEpochs('first');
    expect(before).toEqual({ shard: '0', epoch: 'first', created: true });
    // The marker gone, as after a restart without persistence (only this prefix's key is deleted).
    await store.client.del(subject.redis!.keys.storeEpoch('0'));
    expect(await store.readStoreEpochs('second')).toEqual([{ shard: '0', epoch: 'second', created: true }]);
    expect(await store.readStoreEpochs('third')).toEqual([{ shard: '0', epoch: 'second', created: false }]);
  });
});
