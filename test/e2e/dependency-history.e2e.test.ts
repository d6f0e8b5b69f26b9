import request from 'supertest';
import { ManualClock } from '@sluice/core';
import type { DependencyHistory } from '@sluice/protocol';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const STEP_MS = 10_000;
/** A breaker that opens at half failures over 20 calls; a fixed budget of 10 % plus 1 a second over 10 s. */
const POLICIES = {
  namespaces: {
    shop: {
      dependencies: {
        'payments-api': {
          retryBudget: { mode: 'fixed', ratio: 0.1, minRetriesPerSecond: 1, windowSeconds: 10 },
          breaker: { minimumCalls: 20, failureRateThreshold: 0.5, windowSeconds: 10, openMs: 300_000 },
        },
      },
    },
  },
};

// GET /v1/{ns}/deps/{dep}/history: what the fleet reported over the last 15 minutes, one point per
// 10 s, kept by the store and written by the reports themselves. The embedded store runs on a
// ManualClock, so minutes pass at once.
describe('a dependency’s history (GET /v1/{ns}/deps/{dep}/history)', () => {
  let coordinator: TestCoordinator;
  const clock = new ManualClock(Math.ceil(Date.now() / STEP_MS) * STEP_MS);
  const admin = bearer(ADMIN_TOKEN);
  const client = bearer(SHOP_TOKEN);

  const report = (successes: number, failures: number, dep = 'payments-api') =>
    request(coordinator.server)
      .post('/v1/shop/reports')
      .set(client)
      .send({ reporter: 'pod-a', deps: [{ dep, requests: successes + failures, successes, failures, slow: 0 }] })
      .expect(200);
  const retry = () =>
    request(coordinator.server)
      .post('/v1/shop/deps/payments-api/retry')
      .set(client)
      .send({ attempt: 1, idempotent: true, status: 503 })
      .expect(200);
  const history = async (dep = 'payments-api', token = client): Promise<DependencyHistory> =>
    (await request(coordinator.server).get(`/v1/shop/deps/${dep}/history`).set(token).expect(200)).body;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      policies: POLICIES,
      storeClock: clock,
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] },
    });
  });
  afterAll(() => coordinator?.close());

  it('answers an empty history for a dependency never reported', async () => {
    expect(await history('never-seen')).toEqual({
      namespace: 'shop',
      dependency: 'never-seen',
      stepMs: STEP_MS,
      spanMs: 900_000,
      points: [],
    });
  });

  it('keeps one point per 10 s step of reports: failures, budget use and the breaker, for 15 minutes', async () => {
    const start = clock.now();
    // Two healthy minutes, a report a step.
    for (let step = 0; step < 12; step++) {
      await report(20, 0);
      clock.advance(STEP_MS);
    }
    // A quiet minute: no reports, no points.
    clock.advance(6 * STEP_MS);
    // Then failures climb, retries spend the budget, and the breaker opens.
    const t0 = clock.now();
    await report(18, 2);
    for (let i = 0; i < 2; i++) await retry();
    clock.set(t0 + 5000);
    await report(9, 1);
    clock.set(t0 + STEP_MS);
    await report(14, 6);
    for (let i = 0; i < 6; i++) await retry();
    clock.set(t0 + STEP_MS + 3000);
    await report(7, 3);
    clock.set(t0 + 2 * STEP_MS);
    await report(5, 15);
    clock.set(t0 + 2 * STEP_MS + 3000);
    await report(0, 4);

    const read = await history();
    expect(read.points.map((point) => point.at)).toEqual([
      ...Array.from({ length: 12 }, (_, i) => start + i * STEP_MS),
      t0,
      t0 + STEP_MS,
      t0 + 2 * STEP_MS,
    ]);
    expect(read.points[0]).toEqual({
      at: start,
      calls: 20,
      failureRate: 0,
      slowRate: 0,
      // limit = floor(0.1 × 20 + 1 × 10) = 12; a fixed budget's cap is its limit.
      budget: { retries: 0, retriesSucceeded: 0, requests: 20, limit: 12, cap: 12, windowSeconds: 10 },
      budgetUse: 0,
      state: 'closed',
    });
    // A step's reports add up; its budget is the window its last report left.
    expect(read.points[12]).toEqual({
      at: t0,
      calls: 30,
      failureRate: 0.1,
      slowRate: 0,
      budget: { retries: 2, retriesSucceeded: 0, requests: 30, limit: 13, cap: 13, windowSeconds: 10 },
      budgetUse: 2 / 13,
      state: 'closed',
    });
    expect(read.points[13]).toMatchObject({
      calls: 30,
      failureRate: 0.3,
      budget: { retries: 6, requests: 40, limit: 14 },
      budgetUse: 6 / 14,
      state: 'closed',
    });
    // The step whose reports opened the breaker.
    const opened = read.points[14];
    expect(opened).toMatchObject({ calls: 24, state: 'open' });
    expect(opened.failureRate).toBeCloseTo(19 / 24);

    // An admin token reads the same.
    expect(await history('payments-api', admin)).toEqual(read);
  });

  it('forgets what is older than 15 minutes', async () => {
    const newest = (await history()).points.at(-1)!.at;
    const oldest = (await history()).points[0].at;
    // Just past 15 minutes after the oldest step: it has aged out, the newest has not.
    clock.set(oldest + 900_000);
    const later = (await history()).points;
    expect(later[0].at).toBe(oldest + STEP_MS);
    expect(later.at(-1)!.at).toBe(newest);
    clock.set(newest + 900_000);
    expect((await history()).points).toEqual([]);
  });

  it('refuses a bad name and a token of another namespace', async () => {
    await request(coordinator.server).get('/v1/shop/deps/Bad_Name/history').set(client).expect(400);
    await request(coordinator.server).get('/v1/other/deps/payments-api/history').set(client).expect(403);
  });
});

describe('a dependency’s history on Redis, across instances', () => {
  let coordinator: TestCoordinator;
  afterAll(() => coordinator?.close());

  it('is read by every instance, from the reports one of them recorded', async () => {
    coordinator = await testCoordinator({
      redis: true,
      instances: 2,
      label: 'history',
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] },
    });
    const [first, second] = coordinator.instances;
    await request(first.server)
      .post('/v1/shop/reports')
      .set(bearer(SHOP_TOKEN))
      .send({ reporter: 'pod-a', deps: [{ dep: 'ledger', requests: 10, successes: 7, failures: 3, slow: 1 }] })
      .expect(200);
    const read = await request(second.server).get('/v1/shop/deps/ledger/history').set(bearer(ADMIN_TOKEN)).expect(200);
    const body = read.body as DependencyHistory;
    expect(body.points).toHaveLength(1);
    expect(body.points[0]).toMatchObject({ calls: 10, failureRate: 0.3, slowRate: 0.1, state: 'closed' });
    expect(body.points[0].at % STEP_MS).toBe(0);
  });
});
