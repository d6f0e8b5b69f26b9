import { rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { Redis } from 'ioredis';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Store } from '@sluice/store';
import { POLICY_CACHE_TTL_MS } from '../../apps/coordinator/src/policies/policy.service';
import { STORE } from '../../apps/coordinator/src/store/store.provider';
import { ADMIN_TOKEN, bearer, createTestCoordinator, writePoliciesFile } from '../support/coordinator';
import { findFreePort } from '../support/ports';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../support/redis';
import { RedisServerProcess, waitUntil } from '../support/redis-server';
import { sleep } from '../support/time';

/**
 * Managed policies across a fleet: two coordinators on one Redis (one key prefix) see one version
 * of every policy, a change made through one is used by the other's next decision, and the
 * policies file seeds the store at boot without ever overwriting an operator's change.
 */

jest.setTimeout(30_000);

const admin = bearer(ADMIN_TOKEN);
type Server = ReturnType<NestFastifyApplication['getHttpServer']>;

/** How long pub/sub may take to reach the other instance: far below the cache TTL. */
const DELIVERY_BOUND_MS = 1000;

const retry = (server: Server, ns: string, dep: string, attempt: number) =>
  request(server).post(`/v1/${ns}/deps/${dep}/retry`).set(admin).send({ attempt, idempotent: true }).expect(200);

async function removeKeys(prefix: string): Promise<void> {
  const redis = new Redis(SHARED_REDIS_URL, { protocol: 2 });
  await deleteKeysWithPrefix(redis, `${prefix}:`);
  redis.disconnect();
}

describe('a policy change made through one instance', () => {
  const keyPrefix = uniquePrefix('policies-fleet');
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let readsOnB: jest.SpyInstance;

  beforeAll(async () => {
    const config = { tokens: [ADMIN_TOKEN], redisUrl: SHARED_REDIS_URL, keyPrefix, storeTimeoutMs: 2000 };
    [a, b] = await Promise.all([createTestCoordinator(config), createTestCoordinator(config)]);
    readsOnB = jest.spyOn(b.get<Store>(STORE), 'readPolicies');
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await removeKeys(keyPrefix);
  });

  /**
   * B's decisions until one matches, at most DELIVERY_BOUND_MS. The change reaches B on its own
   * pub/sub connection, which races the PUT's answer to the test, so B is polled briefly.
   */
  async function nextOnB(dep: string, attempt: number, until: (body: { reason: string }) => boolean) {
    const deadline = Date.now() + DELIVERY_BOUND_MS;
    for (;;) {
      const { body } = await retry(b.getHttpServer(), 'shop', dep, attempt);
      if (until(body) || Date.now() >= deadline) return body;
      await sleep(10);
    }
  }

  /** B has read namespace shop and follows its events; its next decisions cost no policy read. */
  async function warmB(dep: string): Promise<number> {
    await retry(b.getHttpServer(), 'shop', dep, 1);
    await sleep(100); // the subscription is confirmed (which drops what was read before it)
    await retry(b.getHttpServer(), 'shop', dep, 1);
    const loadedAt = Date.now();
    readsOnB.mockClear();
    for (let i = 0; i < 3; i++) await retry(b.getHttpServer(), 'shop', dep, 1);
    expect(readsOnB).not.toHaveBeenCalled();
    return loadedAt;
  }

  it("is used by the other instance's next decision, without waiting for the cache TTL", async () => {
    const loadedAt = await warmB('payments-api');
    expect((await retry(b.getHttpServer(), 'shop', 'payments-api', 2)).body.reason).toBe('granted');

    await request(a.getHttpServer())
      .put('/admin/v1/shop/policies/deps/payments-api')
      .set(admin)
      .send({ retryBudget: { maxAttempts: 2 } })
      .expect(200);
    const answer = await nextOnB('payments-api', 2, (body) => body.reason === 'max_attempts');
    expect(answer).toMatchObject({ allow: false, reason: 'max_attempts' });
    // Not the TTL: B's cache was still fresh; the change's event made B read the store again.
    expect(Date.now() - loadedAt).toBeLessThan(POLICY_CACHE_TTL_MS);
    expect(readsOnB).toHaveBeenCalled();

    // The admin API of B serves the same document and ETag as A.
    const onA = await request(a.getHttpServer()).get('/admin/v1/shop/policies/deps/payments-api').set(admin);
    const onB = await request(b.getHttpServer()).get('/admin/v1/shop/policies/deps/payments-api').set(admin);
    expect(onB.body).toEqual(onA.body);
    expect(onB.headers.etag).toBe(onA.headers.etag);
  });

  it('reaches the other instance for a namespace default and a DELETE too', async () => {
    const loadedAt = await warmB('search');
    expect((await retry(b.getHttpServer(), 'shop', 'search', 2)).body.reason).toBe('granted');
    await request(a.getHttpServer())
      .put('/admin/v1/shop/policies/default')
      .set(admin)
      .send({ mode: 'shadow', retryBudget: { maxAttempts: 2 } })
      .expect(200);
    expect(await nextOnB('search', 2, (body) => body.reason === 'max_attempts')).toMatchObject({
      allow: true,
      reason: 'max_attempts',
      shadow: true,
    });

    await request(a.getHttpServer()).delete('/admin/v1/shop/policies/default').set(admin).expect(204);
    expect(await nextOnB('search', 2, (body) => body.reason === 'granted')).toMatchObject({
      allow: true,
      reason: 'granted',
      shadow: false,
    });
    expect(Date.now() - loadedAt).toBeLessThan(POLICY_CACHE_TTL_MS);

    const view = await request(b.getHttpServer()).get('/v1/shop/deps/search').set(admin).expect(200);
    expect(view.body.policy.mode).toBe('enforce');
  });
});

describe('the policies file seeds the store', () => {
  const keyPrefix = uniquePrefix('policies-seed');
  const file = writePoliciesFile({
    default: { backoff: { jitter: 'none' } },
    namespaces: {
      shop: {
        default: { retryBudget: { ratio: 0.3 } },
        dependencies: { 'payments-api': { retryBudget: { maxAttempts: 2 } } },
        limits: { checkout: { rate: 100, periodMs: 1000, burst: 20 } },
        queues: { emails: { maxAttempts: 8 } },
      },
    },
  });
  const config = {
    tokens: [ADMIN_TOKEN],
    redisUrl: SHARED_REDIS_URL,
    keyPrefix,
    storeTimeoutMs: 2000,
    policiesFile: file,
  };
  let app: NestFastifyApplication | undefined;

  afterAll(async () => {
    await app?.close();
    await removeKeys(keyPrefix);
    rmSync(join(file, '..'), { recursive: true, force: true });
  });

  const get = (path: string) => request(app!.getHttpServer()).get(`/admin/v1/shop/policies/${path}`).set(admin);

  it('at boot, and an admin change survives a restart with the same file', async () => {
    app = await createTestCoordinator(config);
    const seeded = await get('default').expect(200);
    expect(seeded.body).toEqual({ retryBudget: { ratio: 0.3 } });
    expect((await get('deps/payments-api').expect(200)).body).toEqual({ retryBudget: { maxAttempts: 2 } });
    expect((await get('limits/checkout').expect(200)).body).toEqual({ rate: 100, periodMs: 1000, burst: 20 });
    expect((await get('queues/emails').expect(200)).body).toEqual({ maxAttempts: 8 });
    // The file's top-level default is not a stored document: it applies under every namespace default.
    const view = await request(app.getHttpServer()).get('/v1/shop/deps/payments-api').set(admin).expect(200);
    expect(view.body.policy).toMatchObject({
      retryBudget: { ratio: 0.3, maxAttempts: 2 },
      backoff: { jitter: 'none' },
    });
    expect((await retry(app.getHttpServer(), 'shop', 'payments-api', 2)).body.reason).toBe('max_attempts');

    const changed = await request(app.getHttpServer())
      .put('/admin/v1/shop/policies/deps/payments-api?reason=more%20retries')
      .set(admin)
      .send({ retryBudget: { maxAttempts: 4 } })
      .expect(200);
    await app.close();

    app = await createTestCoordinator(config);
    const kept = await get('deps/payments-api').expect(200);
    expect(kept.body).toEqual({ retryBudget: { maxAttempts: 4 } });
    expect(kept.headers.etag).toBe(changed.headers.etag);
    // Documents already stored are not written again: same versions.
    expect((await get('default').expect(200)).headers.etag).toBe(seeded.headers.etag);
    expect((await retry(app.getHttpServer(), 'shop', 'payments-api', 3)).body.reason).toBe('granted');
  });
});

describe('seeding when the store is unreachable at boot', () => {
  let redis: RedisServerProcess | undefined;
  let app: NestFastifyApplication | undefined;
  let file: string | undefined;

  afterAll(async () => {
    await app?.close();
    await redis?.cleanup();
    if (file) rmSync(join(file, '..'), { recursive: true, force: true });
  });

  it('boots anyway and seeds in the background once the store is back', async () => {
    const port = await findFreePort();
    file = writePoliciesFile({ namespaces: { shop: { dependencies: { pay: { mode: 'shadow' } } } } });
    const started = Date.now();
    app = await createTestCoordinator({
      tokens: [ADMIN_TOKEN],
      redisUrl: `redis://127.0.0.1:${port}`,
      storeTimeoutMs: 100,
      policiesFile: file,
    });
    // Boot waits for the store's connection (5 s, StoreLifecycle), then at most briefly for seeding.
    expect(Date.now() - started).toBeLessThan(9000);
    const down = await request(app.getHttpServer()).get('/admin/v1/shop/policies/deps/pay').set(admin);
    expect(down.status).toBe(503);

    redis = await new RedisServerProcess({ port }).start();
    let answer: request.Response | undefined;
    await waitUntil(
      async () => {
        answer = await request(app!.getHttpServer()).get('/admin/v1/shop/policies/deps/pay').set(admin);
        return answer.status === 200;
      },
      15_000,
      () => `the policy was not seeded after Redis came back (last answer ${answer?.status})`,
      200,
    );
    expect(answer?.body).toEqual({ mode: 'shadow' });
  });
});
