import request from 'supertest';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const POLICIES = {
  namespaces: {
    shop: {
      dependencies: {
        slow: { backoff: { baseMs: 400, capMs: 400, jitter: 'none' } },
        tight: { retryBudget: { ratio: 0.5, minRetriesPerSecond: 0, maxAttempts: 4 } },
        trial: { mode: 'shadow', retryBudget: { ratio: 0, minRetriesPerSecond: 0 } },
      },
    },
  },
};

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('retry decisions end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const retry = (dep: string, body: object) => request(server).post(`/v1/shop/deps/${dep}/retry`).send(body);
  const report = (deps: object[]) => request(server).post('/v1/shop/reports').send({ reporter: 'pod-a', deps });

  beforeAll(async () => {
    coordinator = await testCoordinator({ redis: useRedis, label: 'retry-e2e', policies: POLICIES });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('answers the documented shape and grants up to the limit, then budget_exhausted', async () => {
    const deposit = await report([{ dep: 'pay', requests: 100, successes: 95, failures: 5, slow: 1 }]).expect(200);
    expect(deposit.body).toEqual({ deps: { pay: { breaker: { state: 'closed' }, reporters: 1 } } });
    const limit = Math.floor(0.1 * 100 + 10 * 10);
    const first = await retry('pay', { attempt: 1, idempotent: true, status: 503 }).expect(200);
    expect(first.body).toEqual({
      allow: true,
      reason: 'granted',
      delayMs: expect.any(Number),
      budget: { retries: 1, retriesSucceeded: 0, requests: 100, limit, cap: 0.5 * 100 + 10 * 10, windowSeconds: 10 },
      breaker: { state: 'closed' },
      shadow: false,
    });
    for (let i = 1; i < limit; i++) await retry('pay', { attempt: 1, idempotent: true }).expect(200);
    const denied = await retry('pay', { attempt: 2, idempotent: true, error: 'timeout' }).expect(200);
    expect(denied.body).toMatchObject({
      allow: false,
      reason: 'budget_exhausted',
      budget: { retries: limit, requests: 100, limit },
    });
  });

  it('charges the retries a client made on its own grant, reported later, to the budget', async () => {
    // floor(0.1 × 100 + 10 × 10) = 110; a client in its local fallback made 109 retries.
    await report([{ dep: 'stock', requests: 100, successes: 100, failures: 0, slow: 0, retries: 109 }]).expect(200);
    expect((await retry('stock', { attempt: 1, idempotent: true }).expect(200)).body).toMatchObject({
      allow: true,
      budget: { retries: 110, requests: 100, limit: 110 },
    });
    expect((await retry('stock', { attempt: 1, idempotent: true }).expect(200)).body).toMatchObject({
      allow: false,
      reason: 'budget_exhausted',
    });
  });

  it('decides not_retriable, not_idempotent and max_attempts before touching the budget', async () => {
    const cases: Array<[object, string]> = [
      [{ attempt: 1, idempotent: true, status: 400 }, 'not_retriable'],
      [{ attempt: 1, idempotent: true, status: 404 }, 'not_retriable'],
      [{ attempt: 1, idempotent: false, status: 503 }, 'not_idempotent'],
      [{ attempt: 1, status: 503 }, 'not_idempotent'],
      [{ attempt: 3, idempotent: true, status: 503 }, 'max_attempts'],
      [{ attempt: 2, idempotent: true, status: 429 }, 'granted'],
      [{ attempt: 1, idempotent: true, status: 408 }, 'granted'],
      [{ attempt: 1, idempotent: true, error: 'connection' }, 'granted'],
    ];
    for (const [body, reason] of cases) {
      const res = await retry('classify', body).expect(200);
      expect({ body, reason: res.body.reason, allow: res.body.allow }).toEqual({
        body,
        reason,
        allow: reason === 'granted',
      });
    }
    const view = await request(server).get('/v1/shop/deps/classify').expect(200);
    expect(view.body.budget.retries).toBe(3);
  });

  it('takes maxAttempts and the budget from the policies file', async () => {
    await report([{ dep: 'tight', requests: 6, successes: 6, failures: 0, slow: 0 }]).expect(200);
    const reasons = [];
    for (let i = 0; i < 4; i++) reasons.push((await retry('tight', { attempt: 3, idempotent: true })).body.reason);
    expect(reasons).toEqual(['granted', 'granted', 'granted', 'budget_exhausted']);
    expect((await retry('tight', { attempt: 4, idempotent: true })).body.reason).toBe('max_attempts');
  });

  it('never waits less than Retry-After, and denies a delay past the deadline', async () => {
    const honoured = await retry('slow', { attempt: 1, idempotent: true, status: 429, retryAfterMs: 1500 });
    expect(honoured.body).toMatchObject({ allow: true, delayMs: 1500 });
    const backoff = await retry('slow', { attempt: 1, idempotent: true, status: 503 });
    expect(backoff.body.delayMs).toBe(400);
    const late = await retry('slow', { attempt: 1, idempotent: true, status: 503, deadlineMs: 399 });
    expect(late.body).toMatchObject({ allow: false, reason: 'deadline_exceeded', delayMs: 400 });
    const view = await request(server).get('/v1/shop/deps/slow').expect(200);
    expect(view.body.budget.retries).toBe(2);
  });

  it('in shadow mode allows, says what enforcement would have said, and still refuses non-idempotent calls', async () => {
    const shadow = await retry('trial', { attempt: 1, idempotent: true });
    expect(shadow.body).toMatchObject({ allow: true, reason: 'budget_exhausted', shadow: true });
    const unsafe = await retry('trial', { attempt: 1, idempotent: false });
    expect(unsafe.body).toMatchObject({ allow: false, reason: 'not_idempotent', shadow: false });
  });

  it('serves the dependency with an ETag, 304 on If-None-Match, and a new ETag after a change', async () => {
    await report([{ dep: 'viewed', requests: 40, successes: 30, failures: 10, slow: 4 }]).expect(200);
    const first = await request(server).get('/v1/shop/deps/viewed').expect(200);
    expect(first.body).toMatchObject({
      namespace: 'shop',
      dependency: 'viewed',
      breaker: { state: 'closed', failureRate: 0.25, slowRate: 0.1, calls: 40 },
      budget: { retries: 0, requests: 40, limit: 104, windowSeconds: 10 },
      policy: { mode: 'enforce', retryBudget: { ratio: 0.1 } },
    });
    const etag = first.headers.etag;
    expect(etag).toMatch(/^".+"$/);
    await request(server).get('/v1/shop/deps/viewed').set('if-none-match', etag).expect(304);
    await retry('viewed', { attempt: 1, idempotent: true }).expect(200);
    const changed = await request(server).get('/v1/shop/deps/viewed').set('if-none-match', etag).expect(200);
    expect(changed.headers.etag).not.toBe(etag);
  });

  it('reads a dependency never seen as empty under the default policy', async () => {
    const res = await request(server).get('/v1/shop/deps/never-seen').expect(200);
    expect(res.body.budget).toEqual({
      mode: 'adaptive',
      retries: 0,
      retriesSucceeded: 0,
      requests: 0,
      limit: 100,
      cap: 100,
      windowSeconds: 10,
    });
    expect(res.body.latency).toEqual({ p50: null, p95: null, p99: null, count: 0 });
  });

  it('counts every decision in sluice_retry_decisions_total by result', async () => {
    await retry('counted', { attempt: 1, idempotent: true }).expect(200);
    await retry('counted', { attempt: 1, idempotent: false }).expect(200);
    await retry('counted', { attempt: 1, idempotent: false }).expect(200);
    const metrics = await request(server).get('/metrics').expect(200);
    expect(metrics.text).toContain(
      'sluice_retry_decisions_total{namespace="shop",dependency="counted",result="granted"} 1',
    );
    expect(metrics.text).toContain(
      'sluice_retry_decisions_total{namespace="shop",dependency="counted",result="not_idempotent"} 2',
    );
    expect(metrics.text).toMatch(
      /sluice_http_request_duration_seconds_count\{method="POST",route="\/v1\/:ns\/deps\/:dep\/retry",status="200"\} \d+/,
    );
  });
});

describe('dependency cap', () => {
  it('answers too_many_dependencies past the namespace cap, naming the field, and keeps known ones working', async () => {
    const capped = await testCoordinator({ config: { maxDependenciesPerNamespace: 2 } });
    const { server } = capped;
    try {
      for (const dep of ['one', 'two']) {
        await request(server).post(`/v1/capped/deps/${dep}/retry`).send({ attempt: 1, idempotent: true }).expect(200);
      }
      const refused = await request(server)
        .post('/v1/capped/deps/three/retry')
        .send({ attempt: 1, idempotent: true })
        .expect(422);
      expect(refused.body).toMatchObject({
        statusCode: 422,
        code: 'too_many_dependencies',
        details: [{ field: 'dep' }],
      });
      const report = await request(server)
        .post('/v1/capped/reports')
        .send({
          reporter: 'r',
          deps: [
            { dep: 'one', requests: 1, successes: 1, failures: 0, slow: 0 },
            { dep: 'four', requests: 1, successes: 1, failures: 0, slow: 0 },
          ],
        })
        .expect(422);
      expect(report.body.details).toEqual([expect.objectContaining({ field: 'deps.1.dep' })]);
      await request(server).post('/v1/capped/deps/one/retry').send({ attempt: 1, idempotent: true }).expect(200);
      await request(server).post('/v1/elsewhere/deps/three/retry').send({ attempt: 1, idempotent: true }).expect(200);
    } finally {
      await capped.close();
    }
  });
});
