import { Redis } from 'ioredis';
import { HISTORY_STEPS, HISTORY_STEP_SECONDS, HISTORY_TTL_SECONDS, historyStepStart } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { RedisStore, SluiceKeys } from '../src';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { redisStoreUnderTest } from './redis-under-test';
import { describeAdaptiveBudgetConformance } from './adaptive-budget-conformance';
import { describeBreakerConformance } from './breaker-conformance';
import { describeLimitsConformance } from './limits-conformance';
import { describeHistoryConformance } from './history-conformance';
import { describeMergedReportsConformance } from './merged-reports-conformance';
import { describeRetryBatchConformance } from './retry-batch-conformance';
import { batch, describeStoreConformance } from './store-conformance';

describeStoreConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'conformance'),
);
describeBreakerConformance('RedisStore (standalone)', () => redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'breakers'));
describeLimitsConformance('RedisStore (standalone)', () => redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'limits'));
describeRetryBatchConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'retry-batches'),
);
describeHistoryConformance('RedisStore (standalone)', () => redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'history'));
describeAdaptiveBudgetConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'adaptive-budgets'),
);

describe('RedisStore keys', () => {
  const prefix = uniquePrefix('keys');
  const keys = new SluiceKeys(prefix);
  let client: Redis;
  let store: RedisStore;
  beforeAll(async () => {
    client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    store = new RedisStore({ client, keys, timeoutMs: 2000 });
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(client, prefix);
    await store.close();
  });

  it('keeps every key of a dependency under one hash tag, each with a TTL of about one window', async () => {
    const ref = { namespace: 'shop', dependency: 'payments-api' };
    await store.recordOutcomes(ref, batch({ requests: 5, successes: 4, failures: 1 }), {
      budgetWindowSeconds: 10,
      breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, windowSeconds: 30 },
    });
    await store.decideRetry(ref, {
      budget: { ratio: 0.1, minRetriesPerSecond: 10, windowSeconds: 10, maxAttempts: 3 },
      delayMs: 0,
    });
    const stored = (await client.keys(`${prefix}:*`)).sort();
    const tagged = `${prefix}:{shop/payments-api}`;
    expect(stored).toEqual([
      `${tagged}:active-reporters`,
      `${tagged}:budget`,
      `${tagged}:history`,
      `${tagged}:outcomes`,
      `${tagged}:reporters`,
    ]);
    const dependencyKeys = keys.dependency('shop', 'payments-api');
    for (const key of [dependencyKeys.budget, dependencyKeys.activeReporters]) {
      const ttl = await client.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(12);
    }
    for (const key of [dependencyKeys.outcomes, dependencyKeys.reporters]) {
      const ttl = await client.ttl(key);
      expect(ttl).toBeGreaterThan(12);
      expect(ttl).toBeLessThanOrEqual(32);
    }
    // The history outlives its 15 minutes by one step, when none of it is read any more.
    const historyTtl = await client.ttl(dependencyKeys.history);
    expect(historyTtl).toBeGreaterThan(900);
    expect(historyTtl).toBeLessThanOrEqual(HISTORY_TTL_SECONDS);
  });

  describe('a dependency’s history on Redis', () => {
    const POLICY = { budgetWindowSeconds: 10, breaker: DEFAULT_DEPENDENCY_POLICY.breaker };
    /** A step as history.lua stores it, `stepsAgo` steps before the current one. */
    const storedStep = (nowSecond: number, stepsAgo: number, failures: number) => {
      const start = historyStepStart(nowSecond) - stepsAgo * HISTORY_STEP_SECONDS;
      const slot = String((start / HISTORY_STEP_SECONDS) % HISTORY_STEPS);
      return [slot, JSON.stringify([start, 5, failures, 0, 1, 0, 20, 12, 20, 10, 'closed'])] as const;
    };
    const redisSecond = async () => Number((await client.time())[0]);

    it('reads the steps of the last 15 minutes in order, and never those older or ahead', async () => {
      const ref = { namespace: 'shop', dependency: 'history-read' };
      const key = keys.dependency(ref.namespace, ref.dependency).history;
      const now = await redisSecond();
      // Written as an older coordinator would have: two steps of the span, one just past it, one ahead.
      for (const [slot, value] of [storedStep(now, 3, 2), storedStep(now, HISTORY_STEPS - 1, 7)]) {
        await client.hset(key, slot, value);
      }
      await client.hset(key, 'ahead', JSON.stringify([historyStepStart(now) + 60, 1, 1, 0, 0, 0, 0, 0, 0, 10, 'open']));
      await client.hset(
        key,
        'old',
        JSON.stringify([historyStepStart(now) - HISTORY_STEPS * 10, 1, 9, 0, 0, 0, 0, 0, 0, 10, 'open']),
      );
      const steps = await store.readHistory(ref);
      // A second may pass between the writes and the read: the step 89 ago may just have aged out.
      const after = await redisSecond();
      const expected = [
        { stepsAgo: HISTORY_STEPS - 1, failures: 7 },
        { stepsAgo: 3, failures: 2 },
      ].filter(({ stepsAgo }) => historyStepStart(after) - historyStepStart(now) + stepsAgo < HISTORY_STEPS);
      expect(steps).toEqual(
        expected.map(({ stepsAgo, failures }) => ({
          at: (historyStepStart(now) - stepsAgo * HISTORY_STEP_SECONDS) * 1000,
          successes: 5,
          failures,
          slow: 0,
          budget: { retries: 1, retriesSucceeded: 0, requests: 20, limit: 12, cap: 20, windowSeconds: 10 },
          state: 'closed',
        })),
      );
    });

    it('writes a report over a slot’s step of 15 minutes before, keeping at most 90 fields', async () => {
      const ref = { namespace: 'shop', dependency: 'history-ring' };
      const key = keys.dependency(ref.namespace, ref.dependency).history;
      const now = await redisSecond();
      // Every slot full of steps from 15 to 30 minutes ago: the ring as a long-quiet dependency leaves it.
      for (let stepsAgo = HISTORY_STEPS; stepsAgo < 2 * HISTORY_STEPS; stepsAgo++) {
        await client.hset(key, ...storedStep(now, stepsAgo, 9));
      }
      expect(await store.readHistory(ref)).toEqual([]);
      await store.recordOutcomes(ref, batch({ requests: 10, successes: 4, failures: 1 }), POLICY);
      expect(await client.hlen(key)).toBe(HISTORY_STEPS);
      const steps = await store.readHistory(ref);
      expect(steps).toHaveLength(1);
      expect(steps[0]).toMatchObject({ successes: 4, failures: 1, slow: 0, state: 'closed' });
      expect(steps[0].budget).toMatchObject({ requests: 10, retries: 0, windowSeconds: 10 });
    });
  });

  it('keeps an idempotency key in one hash under its own tag, with a TTL of max(lease, retention), then retention', async () => {
    const ref = { namespace: 'shop', key: 'Order:42' };
    // The lease outlasts the retention, so the two TTLs differ: max(lease, retention), then retention.
    const claim = { fingerprint: 'f', token: 't', leaseMs: 120_000, retentionMs: 30_000 };
    await store.claimIdempotencyKey(ref, claim);
    const record = `${prefix}:{shop/idem/Order:42}:record`;
    expect(await client.keys(`${prefix}:{shop/idem/*`)).toEqual([record]);
    const claimed = await store.readIdempotencyKey(ref);
    expect(claimed!.expiresAt - claimed!.createdAt).toBe(120_000);
    const held = await client.pttl(record);
    expect(held).toBeGreaterThan(30_000); // not the retention: the lease's
    expect(held).toBeLessThanOrEqual(120_000);
    await store.completeIdempotencyKey(ref, { token: 't', response: 'r' });
    const completed = await store.readIdempotencyKey(ref);
    expect(completed!.expiresAt - completed!.completedAt!).toBe(30_000);
    const kept = await client.pttl(record);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(30_000);
  });

  it('keeps every key of a queue under the queue tag, each with a TTL', async () => {
    const ref = { namespace: 'shop', queue: 'orders' };
    const attempt = {
      error: 'boom',
      payload: '{}',
      maxAttempts: 2,
      attemptRetentionMs: 60_000,
      deadLetters: { retentionMs: 600_000, maxLength: 100 },
    };
    await store.recordDeliveryAttempt(ref, { ...attempt, messageId: 'failing' });
    await store.recordDeliveryAttempt(ref, { ...attempt, messageId: 'parked' });
    await store.recordDeliveryAttempt(ref, { ...attempt, messageId: 'parked' });
    const stored = (await client.keys(`${prefix}:{shop/queue/*`)).sort();
    const tag = `${prefix}:{shop/queue/orders}`;
    expect(stored).toEqual([`${tag}:attempts:failing`, `${tag}:attempts:parked`, `${tag}:dlq`, `${tag}:dlq-index`]);
    expect(await client.pttl(`${tag}:attempts:failing`)).toBeLessThanOrEqual(60_000);
    for (const key of stored) expect(await client.pttl(key)).toBeGreaterThan(0);
    // A parked message's count lives as long as its dead letter.
    expect(await client.pttl(`${tag}:attempts:parked`)).toBeGreaterThan(60_000);
  });

  it('fails fast with StoreUnavailableError when the command does not answer in time', async () => {
    const slow = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    const blocked = new RedisStore({ client: slow, keys, timeoutMs: 50 });
    await blocked.ping();
    // CLIENT PAUSE would stop the shared server; instead, hold this connection with a blocking read.
    void slow.blpop(`${prefix}:never`, 1).catch(() => undefined);
    // Without the store timeout this ping would succeed once BLPOP gives up after 1 s.
    await expect(blocked.ping()).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    await blocked.close();
  });
});
describeMergedReportsConformance('RedisStore (standalone)', () =>
  redisStoreUnderTest({ url: SHARED_REDIS_URL }, 'merged-reports'),
);
