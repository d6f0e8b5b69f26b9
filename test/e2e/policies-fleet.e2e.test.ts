import request from 'supertest';
import type { Store } from '@sluice/store';
import { PolicySeeder } from '../../apps/coordinator/src/policies/policy-seeder';
import { POLICY_CACHE_TTL_MS, PolicyService } from '../../apps/coordinator/src/policies/policy.service';
import { STORE } from '../../apps/coordinator/src/store/store.provider';
import { ADMIN_TOKEN, bearer } from '../support/coordinator';
import { findFreePort } from '../support/ports';
import { RedisServerProcess } from '../support/redis-server';
import { waitUntil } from '../support/time';
import { testCoordinator, type TestCoordinator, type TestInstance } from '../support/test-coordinator';

/**
 * Managed policies across a fleet: two coordinators on one Redis (one key prefix) see one version
 * of every policy, a change made through one is used by the other's next decision, and the
 * policies file seeds the store at boot without ever overwriting an operator's change.
 */

jest.setTimeout(30_000);

const admin = bearer(ADMIN_TOKEN);
type Server = TestInstance['server'];

const retry = (server: Server, ns: string, dep: string, attempt: number) =>
  request(server).post(`/v1/${ns}/deps/${dep}/retry`).set(admin).send({ attempt, idempotent: true }).expect(200);

describe('a policy change made through one instance', () => {
  let fleet: TestCoordinator;
  let a: TestInstance;
  let b: TestInstance;
  let readsOnB: jest.SpyInstance;
  let invalidationsOnB: jest.SpyInstance;
  /** Whether B follows the namespace's events: its subscription was confirmed by the store. */
  const followsOnB = (namespace: string) =>
    (
      b.app.get(PolicyService) as unknown as { watcher: { watches: Map<string, { unsubscribe?: unknown }> } }
    ).watcher.watches.get(namespace)?.unsubscribe !== undefined;

  beforeAll(async () => {
    fleet = await testCoordinator({
      redis: true,
      label: 'policies-fleet',
      instances: 2,
      config: { tokens: [ADMIN_TOKEN] },
    });
    [a, b] = fleet.instances;
    readsOnB = jest.spyOn(b.app.get<Store>(STORE), 'readPolicies');
    invalidationsOnB = jest.spyOn(b.app.get(PolicyService), 'invalidate');
  });

  afterAll(() => fleet?.close());

  /** How often B's cache of namespace shop was dropped. */
  const invalidated = () => invalidationsOnB.mock.calls.filter(([namespace]) => namespace === 'shop').length;

  /**
   * B's decisions until one matches. The change reaches B on its own pub/sub connection, which
   * races the PUT's answer to the test, so B is polled, for at most the cache TTL: however slow
   * the machine, the answer must have changed because the change's event dropped B's cache (an
   * invalidation of the namespace came before the changed answer), not because the TTL lapsed.
   */
  async function nextOnB(
    dep: string,
    attempt: number,
    until: (body: { reason: string }) => boolean,
    /** invalidated() before the change was made through A. */
    before: number,
  ) {
    let body: { reason: string } = { reason: 'none yet' };
    let byEvent = false;
    await waitUntil(
      async () => {
        body = (await retry(b.server, 'shop', dep, attempt)).body;
        byEvent = invalidated() > before;
        return until(body);
      },
      POLICY_CACHE_TTL_MS,
      () => `B still answers ${JSON.stringify(body)}`,
      10,
    ).catch(() => undefined); // the caller's assertion on the last answer says what went wrong
    expect(byEvent).toBe(true);
    return body;
  }

  /**
   * B has read namespace shop and follows its events; its next decisions cost no policy read, and
   * from here on only an event drops its cache before the TTL.
   */
  async function warmB(dep: string): Promise<void> {
    await retry(b.server, 'shop', dep, 1);
    // The subscription is confirmed (which drops what was read before it).
    await waitUntil(
      () => followsOnB('shop'),
      5000,
      () => 'B never followed the events of namespace shop',
      5,
    );
    await retry(b.server, 'shop', dep, 1);
    readsOnB.mockClear();
    invalidationsOnB.mockClear();
    for (let i = 0; i < 3; i++) await retry(b.server, 'shop', dep, 1);
    expect(readsOnB).not.toHaveBeenCalled();
  }

  it("is used by the other instance's next decision, without waiting for the cache TTL", async () => {
    await warmB('payments-api');
    expect((await retry(b.server, 'shop', 'payments-api', 2)).body.reason).toBe('granted');

    const before = invalidated();
    await request(a.server)
      .put('/admin/v1/shop/policies/deps/payments-api')
      .set(admin)
      .send({ retryBudget: { maxAttempts: 2 } })
      .expect(200);
    const answer = await nextOnB('payments-api', 2, (body) => body.reason === 'max_attempts', before);
    expect(answer).toMatchObject({ allow: false, reason: 'max_attempts' });
    // Not the TTL: the change's event dropped B's cache, and B read the store again.
    expect(invalidationsOnB).toHaveBeenCalledWith('shop');
    expect(readsOnB).toHaveBeenCalled();

    // The admin API of B serves the same document and ETag as A.
    const onA = await request(a.server).get('/admin/v1/shop/policies/deps/payments-api').set(admin);
    const onB = await request(b.server).get('/admin/v1/shop/policies/deps/payments-api').set(admin);
    expect(onB.body).toEqual(onA.body);
    expect(onB.headers.etag).toBe(onA.headers.etag);
  });

  it('reaches the other instance for a namespace default and a DELETE too', async () => {
    await warmB('search');
    expect((await retry(b.server, 'shop', 'search', 2)).body.reason).toBe('granted');
    const beforeDefault = invalidated();
    await request(a.server)
      .put('/admin/v1/shop/policies/default')
      .set(admin)
      .send({ mode: 'shadow', retryBudget: { maxAttempts: 2 } })
      .expect(200);
    expect(await nextOnB('search', 2, (body) => body.reason === 'max_attempts', beforeDefault)).toMatchObject({
      allow: true,
      reason: 'max_attempts',
      shadow: true,
    });

    const beforeDelete = invalidated();
    await request(a.server).delete('/admin/v1/shop/policies/default').set(admin).expect(204);
    expect(await nextOnB('search', 2, (body) => body.reason === 'granted', beforeDelete)).toMatchObject({
      allow: true,
      reason: 'granted',
      shadow: false,
    });
    // Both changes reached B by their events (one each), not by the TTL.
    expect(invalidationsOnB.mock.calls.filter(([namespace]) => namespace === 'shop').length).toBeGreaterThanOrEqual(2);

    const view = await request(b.server).get('/v1/shop/deps/search').set(admin).expect(200);
    expect(view.body.policy.mode).toBe('enforce');
  });
});

describe('the policies file seeds the store', () => {
  const POLICIES = {
    default: { backoff: { jitter: 'none' } },
    namespaces: {
      shop: {
        default: { retryBudget: { ratio: 0.3 } },
        dependencies: { 'payments-api': { retryBudget: { maxAttempts: 2 } } },
        limits: { checkout: { rate: 100, periodMs: 1000, burst: 20 } },
        queues: { emails: { maxAttempts: 8 } },
      },
    },
  };
  let fixture: TestCoordinator | undefined;
  let app: TestInstance;

  afterAll(() => fixture?.close());

  const get = (path: string) => request(app.server).get(`/admin/v1/shop/policies/${path}`).set(admin);

  it('at boot, and an admin change survives a restart with the same file', async () => {
    fixture = await testCoordinator({
      redis: true,
      label: 'policies-seed',
      policies: POLICIES,
      config: { tokens: [ADMIN_TOKEN] },
    });
    [app] = fixture.instances;
    const seeded = await get('default').expect(200);
    expect(seeded.body).toEqual({ retryBudget: { ratio: 0.3 } });
    expect((await get('deps/payments-api').expect(200)).body).toEqual({ retryBudget: { maxAttempts: 2 } });
    expect((await get('limits/checkout').expect(200)).body).toEqual({ rate: 100, periodMs: 1000, burst: 20 });
    expect((await get('queues/emails').expect(200)).body).toEqual({ maxAttempts: 8 });
    // The file's top-level default is not a stored document: it applies under every namespace default.
    const view = await request(app.server).get('/v1/shop/deps/payments-api').set(admin).expect(200);
    expect(view.body.policy).toMatchObject({
      retryBudget: { ratio: 0.3, maxAttempts: 2 },
      backoff: { jitter: 'none' },
    });
    expect((await retry(app.server, 'shop', 'payments-api', 2)).body.reason).toBe('max_attempts');

    const changed = await request(app.server)
      .put('/admin/v1/shop/policies/deps/payments-api?reason=more%20retries')
      .set(admin)
      .send({ retryBudget: { maxAttempts: 4 } })
      .expect(200);
    await app.close();

    app = await fixture.addInstance(); // the same store, key prefix and policies file
    const kept = await get('deps/payments-api').expect(200);
    expect(kept.body).toEqual({ retryBudget: { maxAttempts: 4 } });
    expect(kept.headers.etag).toBe(changed.headers.etag);
    // Documents already stored are not written again: same versions.
    expect((await get('default').expect(200)).headers.etag).toBe(seeded.headers.etag);
    expect((await retry(app.server, 'shop', 'payments-api', 3)).body.reason).toBe('granted');
  });
});

describe('seeding when the store is unreachable at boot', () => {
  let redis: RedisServerProcess | undefined;
  let app: TestCoordinator | undefined;

  afterAll(async () => {
    await app?.close();
    await redis?.cleanup();
  });

  it('boots anyway and seeds in the background once the store is back', async () => {
    const port = await findFreePort();
    app = await testCoordinator({
      redis: `redis://127.0.0.1:${port}`,
      policies: { namespaces: { shop: { dependencies: { pay: { mode: 'shadow' } } } } },
      config: { tokens: [ADMIN_TOKEN], storeTimeoutMs: 100 },
    });
    // Boot went on without the seeding (which the seeder's spec bounds to 2 s on a fake clock).
    expect(app.app.get(PolicySeeder).done).toBe(false);
    const down = await request(app.server).get('/admin/v1/shop/policies/deps/pay').set(admin);
    expect(down.status).toBe(503);

    redis = await new RedisServerProcess({ port }).start();
    let answer: request.Response | undefined;
    await waitUntil(
      async () => {
        answer = await request(app!.server).get('/admin/v1/shop/policies/deps/pay').set(admin);
        return answer.status === 200;
      },
      15_000,
      () => `the policy was not seeded after Redis came back (last answer ${answer?.status})`,
      200,
    );
    expect(answer?.body).toEqual({ mode: 'shadow' });
  });
});
