import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * GET /admin/v1/{ns}/policies through the real app: every stored document of a namespace with the
 * ETag its own GET answers, ordered by target, a bounded page at a time.
 */

const admin = bearer(ADMIN_TOKEN);

const DOCUMENTS: Record<string, object> = {
  default: { backoff: { baseMs: 100, capMs: 5000, jitter: 'decorrelated' } },
  'deps/payments-api': { retryBudget: { ratio: 0.2, maxAttempts: 2 }, mode: 'shadow' },
  'deps/inventory': { concurrency: { limit: 5, leaseMs: 1000 } },
  'limits/checkout': { rate: 100, periodMs: 1000, burst: 20 },
  'queues/emails': { maxAttempts: 8 },
};
const TARGETS = ['default', 'deps/inventory', 'deps/payments-api', 'limits/checkout', 'queues/emails'];

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('the list of a namespace\u2019s policy documents (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  const list = (ns: string, query: Record<string, string | number> = {}) =>
    request(coordinator.server).get(`/admin/v1/${ns}/policies`).query(query).set(admin);

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: useRedis,
      label: 'policies-list',
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN], maxDependenciesPerNamespace: 400 },
    });
    for (const [target, document] of Object.entries(DOCUMENTS)) {
      await request(coordinator.server).put(`/admin/v1/shop/policies/${target}`).set(admin).send(document).expect(200);
    }
  });
  afterAll(() => coordinator?.close());

  it('answers every stored document with its ETag, ordered by target', async () => {
    const page = (await list('shop').expect(200)).body;
    expect(page.next).toBeNull();
    expect(page.items.map((item: { target: string }) => item.target)).toEqual(TARGETS);
    for (const item of page.items) {
      const own = await request(coordinator.server)
        .get(`/admin/v1/shop/policies/${item.target}`)
        .set(admin)
        .expect(200);
      expect(item).toEqual({ target: item.target, etag: own.headers.etag, document: DOCUMENTS[item.target] });
    }
  });

  it('pages with limit and cursor, and leaves out deleted documents', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = (await list('shop', { limit: 2, ...(cursor ? { cursor } : {}) }).expect(200)).body;
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((item: { target: string }) => item.target));
      cursor = page.next ?? undefined;
      pages++;
    } while (cursor);
    expect({ pages, seen }).toEqual({ pages: 3, seen: TARGETS });

    await request(coordinator.server).delete('/admin/v1/shop/policies/deps/inventory').set(admin).expect(204);
    const after = (await list('shop', { cursor: 'default' }).expect(200)).body;
    expect(after.items.map((item: { target: string }) => item.target)).toEqual(TARGETS.slice(2));
    await request(coordinator.server)
      .put('/admin/v1/shop/policies/deps/inventory')
      .set(admin)
      .send(DOCUMENTS['deps/inventory'])
      .expect(200);
  });

  it('never answers more than a page: 100 documents by default, at most 1000', async () => {
    const ns = 'crowded';
    for (let i = 0; i < 250; i++) {
      await request(coordinator.server)
        .put(`/admin/v1/${ns}/policies/deps/dep-${String(i).padStart(3, '0')}`)
        .set(admin)
        .send({ mode: 'shadow' })
        .expect(200);
    }
    const first = (await list(ns).expect(200)).body;
    expect({ items: first.items.length, next: first.next }).toEqual({ items: 100, next: 'deps/dep-099' });
    const rest = (await list(ns, { limit: 1000, cursor: first.next }).expect(200)).body;
    expect({ items: rest.items.length, next: rest.next, last: rest.items[149].target }).toEqual({
      items: 150,
      next: null,
      last: 'deps/dep-249',
    });
  });

  it('answers an empty page for a namespace with no documents', async () => {
    expect((await list('empty').expect(200)).body).toEqual({ items: [], next: null });
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 1001 }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ cursor: 'deps' }, 'cursor'],
    [{ cursor: 'rules/x' }, 'cursor'],
    [{ cursor: 'deps/Payments' }, 'cursor'],
  ])('refuses %j with 400 naming %s', async (query, field) => {
    const refused = await list('shop', query as Record<string, string | number>).expect(400);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.details.map((detail: { field: string }) => detail.field)).toContain(field);
  });

  it('is for admin tokens only, like the rest of /admin/v1', async () => {
    await request(coordinator.server).get('/admin/v1/shop/policies').expect(401);
    const refused = await request(coordinator.server).get('/admin/v1/shop/policies').set(bearer(SHOP_TOKEN));
    expect(refused.status).toBe(403);
  });
});
