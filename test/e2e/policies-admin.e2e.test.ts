import request from 'supertest';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy } from '@sluice/protocol';
import { PolicyService } from '../../apps/coordinator/src/policies/policy.service';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * The admin API's policy documents (docs/api.md) through the real app with
 * tokens on: round trips of the four kinds, ETag / If-Match / 412, field-by-field validation,
 * names, roles, the namespace cap, the audit log, and the effect on decisions.
 */

const admin = bearer(ADMIN_TOKEN);
const client = bearer(SHOP_TOKEN);
const ETAG = /^"[1-9]\d*"$/;

interface Kind {
  kind: string;
  path: string;
  target: string;
  first: object;
  second: object;
}

const KINDS: Kind[] = [
  {
    kind: 'dependency',
    path: '/admin/v1/shop/policies/deps/payments-api',
    target: 'deps/payments-api',
    first: { retryBudget: { ratio: 0.2, maxAttempts: 2 }, mode: 'shadow' },
    second: {
      breaker: { halfOpenProbes: 3, failureRateThreshold: 0.25 },
      rateLimit: { rate: 50, periodMs: 1000, burst: 10 },
      concurrency: null,
    },
  },
  {
    kind: 'namespace default',
    path: '/admin/v1/shop/policies/default',
    target: 'default',
    first: { backoff: { baseMs: 100, capMs: 5000, jitter: 'decorrelated' } },
    second: { retryBudget: { windowSeconds: 30 } },
  },
  {
    kind: 'limit',
    path: '/admin/v1/shop/policies/limits/checkout',
    target: 'limits/checkout',
    first: { rate: 100, periodMs: 1000, burst: 20 },
    second: { rate: 5, periodMs: 60000, burst: 5 },
  },
  {
    kind: 'queue',
    path: '/admin/v1/shop/policies/queues/emails',
    target: 'queues/emails',
    first: { maxAttempts: 8 },
    second: { maxAttempts: 3, backoff: { baseMs: 2000, capMs: 2000, jitter: 'none' } },
  },
];

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('policy documents through the admin API (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: useRedis,
      label: 'policies-admin',
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN], maxDependenciesPerNamespace: 20 },
    });
    server = coordinator.server;
  });

  afterAll(() => coordinator?.close());

  const get = (path: string) => request(server).get(path).set(admin);
  const put = (path: string, body: object, headers: Record<string, string> = {}) =>
    request(server).put(path).set(admin).set(headers).send(body);
  const del = (path: string, headers: Record<string, string> = {}) =>
    request(server).delete(path).set(admin).set(headers);
  const retry = (ns: string, dep: string, attempt: number) =>
    request(server).post(`/v1/${ns}/deps/${dep}/retry`).set(admin).send({ attempt, idempotent: true }).expect(200);

  describe.each(KINDS)('$kind', ({ path, first, second }) => {
    it('PUT, GET, PUT again, DELETE: the stored document with a new ETag on every write, then 404', async () => {
      const missing = await get(path).expect(404);
      expect(missing.body).toMatchObject({ statusCode: 404, code: 'not_found' });

      const created = await put(path, first).expect(200);
      expect(created.body).toEqual(first);
      expect(created.headers.etag).toMatch(ETAG);

      const read = await get(path).expect(200);
      expect(read.body).toEqual(first);
      expect(read.headers.etag).toBe(created.headers.etag);

      const replaced = await put(path, second).expect(200);
      expect(replaced.body).toEqual(second);
      expect(replaced.headers.etag).toMatch(ETAG);
      expect(replaced.headers.etag).not.toBe(created.headers.etag);
      expect((await get(path).expect(200)).body).toEqual(second);

      await del(path).expect(204);
      expect((await get(path).expect(404)).body.code).toBe('not_found');
      expect((await del(path).expect(404)).body.code).toBe('not_found');

      // A document created again never reuses an earlier ETag.
      const again = await put(path, first).expect(200);
      expect([created.headers.etag, replaced.headers.etag]).not.toContain(again.headers.etag);
      await del(path).expect(204);
    });

    it('honours If-Match: stale → 412 and nothing changes, current → 200, * only when it exists', async () => {
      expect((await put(path, first, { 'if-match': '*' }).expect(412)).body).toMatchObject({
        statusCode: 412,
        code: 'precondition_failed',
        details: [{ field: 'if-match', message: expect.any(String) }],
      });
      expect((await put(path, first, { 'if-match': '"1"' }).expect(412)).body.code).toBe('precondition_failed');
      await get(path).expect(404);

      const v1 = (await put(path, first).expect(200)).headers.etag;
      const v2 = (await put(path, second, { 'if-match': v1 }).expect(200)).headers.etag;
      expect(v2).not.toBe(v1);

      const stale = await put(path, first, { 'if-match': v1 }).expect(412);
      expect(stale.body).toMatchObject({ code: 'precondition_failed', details: [{ field: 'if-match' }] });
      expect(stale.headers.etag).toBe(v2);
      const unchanged = await get(path).expect(200);
      expect(unchanged.body).toEqual(second);
      expect(unchanged.headers.etag).toBe(v2);

      // A list matches when any entry is current; weak tags never match (strong comparison).
      const v3 = (await put(path, first, { 'if-match': `"999999", ${v2}` }).expect(200)).headers.etag;
      await put(path, second, { 'if-match': `W/${v3}` }).expect(412);
      const v4 = (await put(path, second, { 'if-match': '*' }).expect(200)).headers.etag;

      // If-None-Match: * creates only.
      expect((await put(path, first, { 'if-none-match': '*' }).expect(412)).body).toMatchObject({
        code: 'precondition_failed',
        details: [{ field: 'if-none-match' }],
      });

      await del(path, { 'if-match': v3 }).expect(412);
      expect((await get(path).expect(200)).headers.etag).toBe(v4);
      await del(path, { 'if-match': v4 }).expect(204);
      await del(path, { 'if-match': '*' }).expect(412);
      await del(path, { 'if-match': v4 }).expect(412);

      const created = await put(path, first, { 'if-none-match': '*' }).expect(200);
      await del(path, { 'if-match': '*' }).expect(204);
      expect(created.headers.etag).toMatch(ETAG);
    });

    it.each([['3'], ['"3'], [''], ['"a" "b"'], ['*, "3"']])(
      'a malformed If-Match (%j) is a 400 naming if-match and changes nothing',
      async (header) => {
        const res = await put(path, first, { 'if-match': header }).expect(400);
        expect(res.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'if-match' }] });
        await del(path, { 'if-match': header }).expect(400);
        await get(path).expect(404);
      },
    );
  });

  const DEP = '/admin/v1/shop/policies/deps/pay';
  const DEFAULT = '/admin/v1/shop/policies/default';
  const LIMIT = '/admin/v1/shop/policies/limits/checkout';
  const QUEUE = '/admin/v1/shop/policies/queues/emails';

  it.each([
    [DEP, { retryBudget: { ratio: 2 } }, 'retryBudget.ratio'],
    [DEP, { retryBudget: { maxAttempts: 0 } }, 'retryBudget.maxAttempts'],
    [DEP, { retryBudget: { windowSeconds: 1.5 } }, 'retryBudget.windowSeconds'],
    [DEP, { retryBudget: { ratio: 0.3, maxRatio: 0.2 } }, 'retryBudget.maxRatio'],
    [DEP, { retryBudget: { maxRatio: 0.05 } }, 'retryBudget.maxRatio'],
    [DEP, { retryBudget: { maxRatio: 1.5 } }, 'retryBudget.maxRatio'],
    [DEP, { retryBudget: { mode: 'elastic' } }, 'retryBudget.mode'],
    [DEP, { breaker: { halfOpenProbes: 0 } }, 'breaker.halfOpenProbes'],
    [DEP, { breaker: { failureRateThreshold: '0.5' } }, 'breaker.failureRateThreshold'],
    [DEP, { breaker: { openMs: 60000, maxOpenMs: 30000 } }, 'breaker.maxOpenMs'],
    [DEP, { backoff: { baseMs: 500, capMs: 100 } }, 'backoff.capMs'],
    [DEP, { backoff: { baseMs: 5000 } }, 'backoff.capMs'],
    [DEP, { backoff: { jitter: 'wild' } }, 'backoff.jitter'],
    [DEP, { mode: 'strict' }, 'mode'],
    [DEP, { rateLimit: { rate: 0, periodMs: 1000, burst: 1 } }, 'rateLimit.rate'],
    [DEP, { rateLimit: { rate: 1, periodMs: 1000 } }, 'rateLimit.burst'],
    [DEP, { concurrency: { limit: 5, leaseMs: 10 } }, 'concurrency.leaseMs'],
    [DEP, { retryBudget: 3 }, 'retryBudget'],
    [DEP, { surprise: true }, 'surprise'],
    [DEP, { breaker: { surprise: 1 } }, 'breaker.surprise'],
    [DEFAULT, { retryBudget: { windowSeconds: 0 } }, 'retryBudget.windowSeconds'],
    [DEFAULT, { backoff: { capMs: 10 } }, 'backoff.capMs'],
    [LIMIT, { rate: 100, periodMs: 1000 }, 'burst'],
    [LIMIT, {}, 'rate'],
    [LIMIT, { rate: 0, periodMs: 1000, burst: 1 }, 'rate'],
    [LIMIT, { rate: 1, periodMs: 1000, burst: 1, window: 5 }, 'window'],
    [QUEUE, { maxAttempts: 0 }, 'maxAttempts'],
    [QUEUE, { maxAttempts: 2.5 }, 'maxAttempts'],
    [QUEUE, { backoff: { baseMs: 90000 } }, 'backoff.capMs'],
    [QUEUE, { backoff: { jitter: 'some' } }, 'backoff.jitter'],
    [QUEUE, { deadLetter: false }, 'deadLetter'],
  ])('PUT %s %j → 400 naming %s, nothing stored', async (path, body, field) => {
    const res = await put(path, body).expect(400);
    expect(res.body).toMatchObject({ statusCode: 400, code: 'validation_failed' });
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    await get(path).expect(404);
  });

  it('checks a dependency document against the namespace default it overlays', async () => {
    // baseMs 5000 is over the built-in capMs 2000, but not over this namespace's capMs.
    await put(DEFAULT, { backoff: { capMs: 60000 } }).expect(200);
    await put(DEP, { backoff: { baseMs: 5000 } }).expect(200);
    await del(DEP).expect(204);
    await del(DEFAULT).expect(204);
  });

  it('checks a stated maxRatio against the ratio it overlays; one left out is raised to the ratio', async () => {
    await put(DEFAULT, { retryBudget: { ratio: 0.4 } }).expect(200);
    const below = await put(DEP, { retryBudget: { maxRatio: 0.3 } }).expect(400);
    expect(below.body.details).toEqual([
      { field: 'retryBudget.maxRatio', message: 'maxRatio must not be below retryBudget.ratio' },
    ]);
    await get(DEP).expect(404);
    await put(DEP, { retryBudget: { mode: 'fixed', maxRatio: 0.4 } }).expect(200);
    await put(DEP, { retryBudget: { ratio: 0.8 } }).expect(200);
    const view = await request(server).get('/v1/shop/deps/pay').set(admin).expect(200);
    expect(view.body.policy.retryBudget).toMatchObject({ mode: 'adaptive', ratio: 0.8, maxRatio: 0.8 });
    expect(view.body.budget).toMatchObject({ mode: 'adaptive', limit: 100, cap: 100 });
    await del(DEP).expect(204);
    await del(DEFAULT).expect(204);
  });

  it.each([
    ['/admin/v1/Shop/policies/default', 'ns', {}],
    ['/admin/v1/shop/policies/deps/Pay', 'dep', {}],
    ['/admin/v1/shop/policies/deps/-pay', 'dep', {}],
    [`/admin/v1/shop/policies/limits/${'l'.repeat(129)}`, 'limit', { rate: 1, periodMs: 1000, burst: 1 }],
    ['/admin/v1/shop/policies/queues/e%20mails', 'queue', { maxAttempts: 1 }],
  ])('a bad name (%s) is a 400 naming %s on GET, PUT and DELETE', async (path, field, body) => {
    for (const res of [await get(path), await put(path, body), await del(path)]) {
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
  });

  it('refuses a missing body, a body that is not a JSON object, and a reason over 500 characters', async () => {
    const empty = await request(server).put(DEP).set(admin);
    expect(empty.status).toBe(400);
    expect(empty.body.details).toEqual([expect.objectContaining({ field: 'body' })]);
    const array = await request(server).put(DEP).set(admin).set('content-type', 'application/json').send('[]');
    expect(array.status).toBe(400);
    expect(array.body.details).toEqual([expect.objectContaining({ field: 'body' })]);
    const reason = await put(`${DEP}?reason=${'r'.repeat(501)}`, {}).expect(400);
    expect(reason.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'reason' })]));
    const unknownQuery = await put(`${DEP}?why=because`, {}).expect(400);
    expect(unknownQuery.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'why' })]));
    await get(DEP).expect(404);
  });

  it('gives a client token 403 and no token 401 on every policy route, changing nothing', async () => {
    const paths = [DEFAULT, DEP, LIMIT, QUEUE];
    for (const path of paths) {
      for (const method of ['get', 'put', 'delete'] as const) {
        const call = request(server)[method](path).set(client);
        const asClient = await (method === 'put' ? call.send({}) : call);
        expect({ path, method, status: asClient.status, code: asClient.body.code }).toEqual({
          path,
          method,
          status: 403,
          code: 'forbidden',
        });
        const anonymous = await request(server)[method](path);
        expect({ path, method, status: anonymous.status }).toEqual({ path, method, status: 401 });
      }
      await get(path).expect(404);
    }
  });

  it('counts a dependency policy under the namespace cap', async () => {
    const paths = Array.from({ length: 21 }, (_, i) => `/admin/v1/capped/policies/deps/dep-${i}`);
    for (const path of paths.slice(0, 20)) await put(path, {}).expect(200);
    const over = await put(paths[20], {}).expect(422);
    expect(over.body).toMatchObject({ code: 'too_many_dependencies', details: [{ field: 'dep' }] });
    await get(paths[20]).expect(404);
    // Limits and queues are not dependencies.
    await put('/admin/v1/capped/policies/limits/checkout', { rate: 1, periodMs: 1000, burst: 1 }).expect(200);
  });

  it('records every PUT and DELETE in the audit log with the token id and ?reason=, in order', async () => {
    const ns = '/admin/v1/audited/policies';
    await put(`${ns}/deps/payments-api?reason=${encodeURIComponent('INC-42: fewer retries')}`, {
      retryBudget: { maxAttempts: 2 },
    }).expect(200);
    await put(`${ns}/default`, { mode: 'shadow' }).expect(200);
    await put(`${ns}/limits/checkout?reason=launch`, { rate: 10, periodMs: 1000, burst: 10 }).expect(200);
    await put(`${ns}/queues/emails`, { maxAttempts: 2 }).expect(200);
    // Refused changes are not audited.
    await put(`${ns}/queues/emails`, { maxAttempts: 3 }, { 'if-match': '"999"' }).expect(412);
    await put(`${ns}/queues/emails`, { maxAttempts: 0 }).expect(400);
    await del(`${ns}/deps/payments-api?reason=rollback`).expect(204);
    await del(`${ns}/default`).expect(204);
    await del(`${ns}/default`).expect(404);

    const audit = await request(server).get('/admin/v1/audit?ns=audited').set(admin).expect(200);
    // A policy change sets no forced state: no duration, no end.
    const untimed = { durationMs: null, endsAt: null };
    expect(audit.body.items.map(({ at: _at, ...entry }: { at: number }) => entry)).toEqual([
      {
        actor: 'ops',
        action: 'policy.put',
        namespace: 'audited',
        target: 'deps/payments-api',
        reason: 'INC-42: fewer retries',
        ...untimed,
      },
      { actor: 'ops', action: 'policy.put', namespace: 'audited', target: 'default', reason: null, ...untimed },
      {
        actor: 'ops',
        action: 'policy.put',
        namespace: 'audited',
        target: 'limits/checkout',
        reason: 'launch',
        ...untimed,
      },
      { actor: 'ops', action: 'policy.put', namespace: 'audited', target: 'queues/emails', reason: null, ...untimed },
      {
        actor: 'ops',
        action: 'policy.delete',
        namespace: 'audited',
        target: 'deps/payments-api',
        reason: 'rollback',
        ...untimed,
      },
      { actor: 'ops', action: 'policy.delete', namespace: 'audited', target: 'default', reason: null, ...untimed },
    ]);
    const times = audit.body.items.map((entry: { at: number }) => entry.at);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  describe('the policy in force', () => {
    const NS = 'effects';
    const dep = (name: string) => `/admin/v1/${NS}/policies/deps/${name}`;
    const nsDefault = `/admin/v1/${NS}/policies/default`;

    it('applies a dependency document to the next decision, and DELETE restores the defaults', async () => {
      expect((await retry(NS, 'payments-api', 2)).body).toMatchObject({ allow: true, reason: 'granted' });
      await put(dep('payments-api'), { retryBudget: { maxAttempts: 2 } }).expect(200);
      expect((await retry(NS, 'payments-api', 2)).body).toMatchObject({ allow: false, reason: 'max_attempts' });
      expect((await retry(NS, 'payments-api', 1)).body).toMatchObject({ allow: true, reason: 'granted' });

      await put(dep('payments-api'), { retryBudget: { maxAttempts: 2 }, mode: 'shadow' }).expect(200);
      expect((await retry(NS, 'payments-api', 2)).body).toMatchObject({
        allow: true,
        reason: 'max_attempts',
        shadow: true,
      });

      await del(dep('payments-api')).expect(204);
      expect((await retry(NS, 'payments-api', 2)).body).toMatchObject({
        allow: true,
        reason: 'granted',
        shadow: false,
      });
    });

    it('applies the namespace default to dependencies without a document of their own, under theirs', async () => {
      await put(nsDefault, { retryBudget: { maxAttempts: 2, ratio: 0.3 } }).expect(200);
      await put(dep('search'), { retryBudget: { maxAttempts: 4 } }).expect(200);
      expect((await retry(NS, 'inventory', 2)).body).toMatchObject({ allow: false, reason: 'max_attempts' });
      expect((await retry(NS, 'search', 3)).body).toMatchObject({ allow: true, reason: 'granted' });

      const view = await request(server).get(`/v1/${NS}/deps/search`).set(admin).expect(200);
      expect(view.body.policy).toEqual(
        mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, { retryBudget: { maxAttempts: 4, ratio: 0.3 } }),
      );
      const other = await request(server).get(`/v1/${NS}/deps/inventory`).set(admin).expect(200);
      expect(other.body.policy.retryBudget).toEqual({
        ...DEFAULT_DEPENDENCY_POLICY.retryBudget,
        maxAttempts: 2,
        ratio: 0.3,
      });

      await del(nsDefault).expect(204);
      await del(dep('search')).expect(204);
      expect((await retry(NS, 'inventory', 2)).body).toMatchObject({ allow: true, reason: 'granted' });
      const restored = await request(server).get(`/v1/${NS}/deps/search`).set(admin).expect(200);
      expect(restored.body.policy).toEqual(DEFAULT_DEPENDENCY_POLICY);
    });

    it('serves named limits and queues to the services that use them', async () => {
      const policies = coordinator.app.get(PolicyService);
      expect(await policies.forLimit(NS, 'checkout')).toBeUndefined();
      expect(await policies.forQueue(NS, 'emails')).toEqual({
        maxAttempts: 5,
        backoff: { baseMs: 1000, capMs: 60000, jitter: 'full' },
      });
      await put(`/admin/v1/${NS}/policies/limits/checkout`, { rate: 100, periodMs: 1000, burst: 20 }).expect(200);
      await put(`/admin/v1/${NS}/policies/queues/emails`, { maxAttempts: 8, backoff: { jitter: 'none' } }).expect(200);
      expect(await policies.forLimit(NS, 'checkout')).toEqual({ rate: 100, periodMs: 1000, burst: 20 });
      expect(await policies.forQueue(NS, 'emails')).toEqual({
        maxAttempts: 8,
        backoff: { baseMs: 1000, capMs: 60000, jitter: 'none' },
      });
    });
  });
});
