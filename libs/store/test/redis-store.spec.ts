import { Redis } from 'ioredis';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { RedisStore, SluiceKeys } from '../src';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { redisStoreUnderTest } from './redis-under-test';
import { describeAdaptiveBudgetConformance } from './adaptive-budget-conformance';
import { describeBreakerConformance } from './breaker-conformance';
import { describeLimitsConformance } from './limits-conformance';
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
