import request from 'supertest';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// 100 requests: limit floor(0.1 × 100) = 10; cap floor(0.3 × 100) = 30 when adaptive, the limit when fixed.
const BUDGET = { ratio: 0.1, maxRatio: 0.3, minRetriesPerSecond: 0 };
const POLICIES = {
  namespaces: {
    shop: {
      dependencies: {
        adaptive: { retryBudget: BUDGET },
        batched: { retryBudget: BUDGET },
        fixed: { retryBudget: { ...BUDGET, mode: 'fixed' } },
      },
    },
  },
};

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('adaptive budgets end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const ask = { attempt: 1, idempotent: true, status: 503 };
  const retry = (dep: string) => request(server).post(`/v1/shop/deps/${dep}/retry`).send(ask).expect(200);
  const retries = (asks: object[]) => request(server).post('/v1/shop/retries').send({ asks }).expect(200);
  const report = (reporter: string, entry: object) =>
    request(server)
      .post('/v1/shop/reports')
      .send({ reporter, deps: [entry] })
      .expect(200);
  const view = async (dep: string) => (await request(server).get(`/v1/shop/deps/${dep}`).expect(200)).body;

  beforeAll(async () => {
    coordinator = await testCoordinator({ redis: useRedis, label: 'adaptive-e2e', policies: POLICIES });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('gives back, on POST …/retry, the grants of the retries reports said succeeded, up to the cap', async () => {
    await report('pod-a', { dep: 'adaptive', requests: 100, successes: 100, failures: 0, slow: 0 });
    for (let i = 0; i < 10; i++) await retry('adaptive');
    const denied = await retry('adaptive');
    expect(denied.body).toMatchObject({
      allow: false,
      reason: 'budget_exhausted',
      budget: { retries: 10, retriesSucceeded: 0, requests: 100, limit: 10, cap: 30, windowSeconds: 10 },
      retryAfterMs: 10_000,
    });
    await report('pod-b', {
      dep: 'adaptive',
      requests: 0,
      successes: 4,
      failures: 0,
      slow: 0,
      retriesSucceeded: 4,
    });
    const refunded = await retry('adaptive');
    expect(refunded.body).toMatchObject({
      allow: true,
      reason: 'granted',
      budget: { retries: 11, retriesSucceeded: 4, requests: 100, limit: 10, cap: 30, windowSeconds: 10 },
    });
    expect(await view('adaptive')).toMatchObject({
      budget: { mode: 'adaptive', retries: 11, retriesSucceeded: 4, requests: 100, limit: 10, cap: 30 },
      policy: { retryBudget: { mode: 'adaptive', maxRatio: 0.3 } },
    });
  });

  it('answers the same fields on POST /retries, a refund reported between two batches', async () => {
    await report('pod-a', { dep: 'batched', requests: 100, successes: 100, failures: 0, slow: 0 });
    const first = await retries(Array.from({ length: 11 }, () => ({ dep: 'batched', ...ask })));
    expect(first.body.decisions.map((d: { reason: string }) => d.reason)).toEqual([
      ...Array(10).fill('granted'),
      'budget_exhausted',
    ]);
    expect(first.body.decisions[10]).toMatchObject({
      budget: { retries: 10, retriesSucceeded: 0, limit: 10, cap: 30 },
      retryAfterMs: 10_000,
    });
    await report('pod-a', { dep: 'batched', requests: 0, successes: 2, failures: 0, slow: 0, retriesSucceeded: 2 });
    const second = await retries(Array.from({ length: 3 }, () => ({ dep: 'batched', ...ask })));
    expect(second.body.decisions.map((d: { reason: string }) => d.reason)).toEqual([
      'granted',
      'granted',
      'budget_exhausted',
    ]);
    expect(second.body.decisions[1].budget).toEqual({
      retries: 12,
      retriesSucceeded: 2,
      requests: 100,
      limit: 10,
      cap: 30,
      windowSeconds: 10,
    });
  });

  it('keeps a fixed budget fixed, and lists every budget with its successes and cap', async () => {
    await report('pod-a', {
      dep: 'fixed',
      requests: 100,
      successes: 100,
      failures: 0,
      slow: 0,
      retriesSucceeded: 50,
    });
    for (let i = 0; i < 10; i++) await retry('fixed');
    expect((await retry('fixed')).body).toMatchObject({
      allow: false,
      reason: 'budget_exhausted',
      budget: { retries: 10, retriesSucceeded: 50, limit: 10, cap: 10 },
    });
    expect((await view('fixed')).budget).toMatchObject({ mode: 'fixed', cap: 10 });
    const listed = await request(server).get('/admin/v1/shop/budgets').expect(200);
    const byName = Object.fromEntries(listed.body.items.map((item: { dependency: string }) => [item.dependency, item]));
    expect(byName.fixed).toEqual({
      dependency: 'fixed',
      retries: 10,
      retriesSucceeded: 50,
      requests: 100,
      limit: 10,
      cap: 10,
      exhausted: true,
    });
    // 11 retries, 4 succeeded: 7 net, under the limit of 10 — not exhausted, though retries > limit.
    expect(byName.adaptive).toEqual({
      dependency: 'adaptive',
      retries: 11,
      retriesSucceeded: 4,
      requests: 100,
      limit: 10,
      cap: 30,
      exhausted: false,
    });
  });

  it('counts the retries that succeeded, and shows the cap an exhausted budget stopped at, in /metrics', async () => {
    const metrics = (await request(server).get('/metrics').expect(200)).text;
    const sample = (name: string, dependency: string) =>
      metrics.split('\n').find((line) => line.startsWith(`${name}{namespace="shop",dependency="${dependency}"}`));
    expect(sample('sluice_retries_succeeded_total', 'adaptive')).toMatch(/ 4$/);
    expect(sample('sluice_retries_succeeded_total', 'batched')).toMatch(/ 2$/);
    expect(sample('sluice_retries_succeeded_total', 'fixed')).toMatch(/ 50$/);
    expect(sample('sluice_retry_budget_cap', 'batched')).toMatch(/ 30$/);
    expect(sample('sluice_retry_budget_cap', 'fixed')).toMatch(/ 10$/);
  });

  it('refuses a negative or fractional retriesSucceeded, naming it, and records nothing', async () => {
    for (const retriesSucceeded of [-1, 1.5, 'two']) {
      const res = await request(server)
        .post('/v1/shop/reports')
        .send({
          reporter: 'pod-a',
          deps: [{ dep: 'untouched', requests: 5, successes: 0, failures: 0, slow: 0, retriesSucceeded }],
        })
        .expect(400);
      expect(res.body.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ field: 'deps.0.retriesSucceeded' })]),
      );
    }
    expect((await view('untouched')).budget).toMatchObject({ requests: 0, retriesSucceeded: 0 });
  });
});
