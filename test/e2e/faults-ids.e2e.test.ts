import request from 'supertest';
import { SluiceKeys } from '@sluice/store';
import { uniquePrefix } from '../support/redis';
import { RedisServerProcess } from '../support/redis-server';
import { waitUntil } from '../support/time';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/*
 * "A 503 hides nothing" (docs/api.md, Conventions). A coordinator on a private redis-server (never the
 * shared one on 6379) with a short store timeout. Redis is hung (SIGSTOP) while a claim, an admit,
 * a take, a delivery attempt and a retry are in flight: each answers 503 store_unavailable, yet its
 * script sits in Redis's socket and runs once Redis is resumed (SIGCONT), a change the caller never
 * saw. Asked again with the same caller-chosen id, each call answers that change instead of making
 * a second one; a new id sees exactly one more change.
 */

const STORE_TIMEOUT_MS = 150;
/** How long the hidden changes may take to land once Redis runs again (a bound, not a timing assertion). */
const LAND_TIMEOUT_MS = 10_000;

const POLICIES = {
  namespaces: {
    shop: {
      dependencies: { pay: { concurrency: { limit: 1, leaseMs: 60_000 } } },
      limits: { 'per-user': { rate: 1, periodMs: 3_600_000, burst: 1 } },
      queues: { orders: { maxAttempts: 5 } },
    },
  },
};

const IDEMPOTENCY_KEY = 'order-42';
const MESSAGE_ID = 'msg-42';
const CLAIM = { fingerprint: 'sha256:order-42', claimId: 'claim-1' };
const ADMIT = { requestId: 'admit-1' };
const TAKE = { key: 'user-42', requestId: 'take-1' };
const ATTEMPT = { messageId: MESSAGE_ID, error: 'boom', attempt: 1 };
const RETRY = { attempt: 1, idempotent: true, status: 503, requestId: 'retry-1' };

const PATHS = {
  claim: `/v1/shop/idempotency/${IDEMPOTENCY_KEY}/claim`,
  admit: '/v1/shop/deps/pay/admit',
  take: '/v1/shop/limits/per-user/take',
  attempt: '/v1/shop/queues/orders/attempts',
  retry: '/v1/shop/deps/pay/retry',
};

describe('a 503 hides nothing: caller-chosen ids across a hung Redis (private redis-server)', () => {
  const redis = new RedisServerProcess();
  const prefix = uniquePrefix('faults-ids');
  const keys = new SluiceKeys(prefix);
  let coordinator: TestCoordinator | undefined;
  const direct = () => coordinator!.redisClient();

  const post = (path: string, body: object) => request(coordinator!.server).post(path).send(body);
  const retriesOfPay = async () =>
    (await request(coordinator!.server).get('/v1/shop/deps/pay').expect(200)).body.budget.retries as number;

  beforeAll(async () => {
    await redis.start();
    coordinator = await testCoordinator({
      redis: redis.url,
      policies: POLICIES,
      config: {
        keyPrefix: prefix,
        storeTimeoutMs: STORE_TIMEOUT_MS,
        // No shedding on event-loop delay: every 503 here must be the store's.
        maxEventLoopDelayMs: 0,
      },
    });
  });

  afterAll(async () => {
    redis.resume(); // a failure between SIGSTOP and SIGCONT must not leave the server stopped
    try {
      await coordinator?.close();
    } finally {
      await redis.cleanup();
    }
  });

  it('answers each first outcome to a repeat with the same id, and one more change to a new id', async () => {
    // Warm up: the namespace's policies read, `pay` registered and every script loaded, so that
    // while Redis is hung each call below reaches its own script (and nothing else) before timing out.
    const warm = await post(PATHS.admit, { requestId: 'warm-up' }).expect(200);
    await request(coordinator!.server).delete(`/v1/shop/deps/pay/leases/${warm.body.lease.id}`).expect(204);
    await post(PATHS.take, { key: 'warm-up' }).expect(200);
    await post('/v1/shop/idempotency/warm-up/claim', { fingerprint: 'sha256:warm-up' }).expect(201);
    await post(PATHS.attempt, { messageId: 'warm-up' }).expect(200);
    await post('/v1/shop/deps/warm-up/retry', { attempt: 1, idempotent: true, status: 503 }).expect(200);

    // Redis hangs past the store timeout while each call is in flight: every one answers 503.
    redis.pause();
    let hung: request.Response[];
    try {
      hung = await Promise.all([
        post(PATHS.claim, CLAIM),
        post(PATHS.admit, ADMIT),
        post(PATHS.take, TAKE),
        post(PATHS.attempt, ATTEMPT),
        post(PATHS.retry, RETRY),
      ]);
    } finally {
      redis.resume();
    }
    for (const [name, answer] of Object.keys(PATHS).map((name, i) => [name, hung[i]] as const)) {
      expect({ name, status: answer.status, code: answer.body.code }).toEqual({
        name,
        status: 503,
        code: 'store_unavailable',
      });
    }

    // Resumed, Redis runs the scripts it had been sent: the changes nobody saw land.
    const recordKey = keys.idempotency('shop', IDEMPOTENCY_KEY).record;
    const leasesKey = keys.dependency('shop', 'pay').leases;
    const rateKey = keys.rateLimit('shop', 'per-user', TAKE.key);
    const attemptsKey = keys.deliveryAttempts('shop', 'orders', MESSAGE_ID);
    await waitUntil(
      async () =>
        (await direct().exists(recordKey, rateKey, attemptsKey)) === 3 &&
        (await direct().zcard(leasesKey)) === 1 &&
        (await retriesOfPay()) === 1,
      LAND_TIMEOUT_MS,
      () => 'the calls that answered 503 did not change the state once Redis was resumed',
    );

    // Asked again with the same ids: the first outcomes, no second change.
    const claim = await post(PATHS.claim, CLAIM).expect(201);
    expect(claim.body).toMatchObject({ state: 'claimed', resumed: true, recovered: false });
    expect(claim.body.token).toBe(await direct().hget(recordKey, 'tok'));
    const admit = await post(PATHS.admit, ADMIT).expect(200);
    expect(admit.body).toMatchObject({ allow: true, reason: 'granted', lease: { id: expect.any(String) } });
    expect(await direct().zrange(leasesKey, '0', '-1')).toEqual([admit.body.lease.id]);
    const take = await post(PATHS.take, TAKE).expect(200);
    expect(take.body).toMatchObject({ allow: true, limit: 1, remaining: 0 });
    const attempt = await post(PATHS.attempt, ATTEMPT).expect(200);
    expect(attempt.body).toMatchObject({ attempt: 1, deadLetter: false });
    const retry = await post(PATHS.retry, RETRY).expect(200);
    expect(retry.body).toMatchObject({ allow: true, reason: 'granted', budget: { retries: 1 } });
    expect(await retriesOfPay()).toBe(1);
    // Asked once more, still the same.
    expect((await post(PATHS.claim, CLAIM).expect(201)).body).toEqual(claim.body);
    expect((await post(PATHS.admit, ADMIT).expect(200)).body).toEqual(admit.body);
    expect((await post(PATHS.take, TAKE).expect(200)).body).toEqual(take.body);
    expect((await post(PATHS.attempt, ATTEMPT).expect(200)).body).toEqual(attempt.body);
    expect((await post(PATHS.retry, RETRY).expect(200)).body).toEqual(retry.body);

    // A new id sees exactly one change: the slot, the burst and the key are taken once.
    await post(PATHS.claim, { ...CLAIM, claimId: 'claim-2' }).expect(409);
    expect((await post(PATHS.admit, { requestId: 'admit-2' }).expect(200)).body).toMatchObject({
      allow: false,
      reason: 'concurrency_limited',
    });
    expect((await post(PATHS.take, { ...TAKE, requestId: 'take-2' }).expect(200)).body).toMatchObject({
      allow: false,
      remaining: 0,
    });
    expect((await post(PATHS.attempt, { ...ATTEMPT, attempt: 2 }).expect(200)).body).toMatchObject({ attempt: 2 });
    expect((await post(PATHS.retry, { ...RETRY, requestId: 'retry-2' }).expect(200)).body).toMatchObject({
      budget: { retries: 2 },
    });
    expect(await retriesOfPay()).toBe(2);

    // The resumed token and the repeated lease are the real ones: they complete the key and free the slot.
    await request(coordinator!.server)
      .put(`/v1/shop/idempotency/${IDEMPOTENCY_KEY}`)
      .send({ token: claim.body.token, response: { status: 201, headers: {}, body: 'ordered' } })
      .expect(204);
    await request(coordinator!.server).delete(`/v1/shop/deps/pay/leases/${admit.body.lease.id}`).expect(204);
    expect((await post(PATHS.admit, { requestId: 'admit-3' }).expect(200)).body).toMatchObject({ allow: true });
  });
});
