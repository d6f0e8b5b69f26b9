import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * A fast breaker for namespace shop: opens after 10 calls, 1 s open (doubling up to 2 s), 2 probe
 * successes close it. Long enough that a loaded machine still finds it open (or its probe leased)
 * a few requests after it opened.
 */
const OPEN_MS = 1000;
const MAX_OPEN_MS = 2000;
const PROBE_LEASE_MS = 2000;
const POLICIES = {
  namespaces: {
    shop: {
      default: {
        breaker: {
          minimumCalls: 10,
          openMs: OPEN_MS,
          maxOpenMs: MAX_OPEN_MS,
          closeAfterSuccesses: 2,
          probeLeaseMs: PROBE_LEASE_MS,
        },
      },
      dependencies: {
        // limit = floor(0.1 × requests + 0 × windowSeconds): exhausted after a handful of retries.
        stingy: { retryBudget: { minRetriesPerSecond: 0 } },
      },
    },
  },
};

jest.setTimeout(20_000);

const BREAKER_STATES = ['closed', 'open', 'half_open', 'forced_open', 'forced_closed'];

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('circuit breakers end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  /** Lets the breaker's open duration pass on the store's clock (Redis's TIME, or this process's). */
  const waitPast = (instant: number) => coordinator.waitPast(instant);

  const client = bearer(SHOP_TOKEN);
  const admin = bearer(ADMIN_TOKEN);
  const report = (deps: object[], reporter = 'pod-a') =>
    request(server).post('/v1/shop/reports').set(client).send({ reporter, deps });
  const failures = (dep: string, n = 10) => report([{ dep, requests: n, successes: 0, failures: n, slow: 0 }]);
  const probeOutcome = (dep: string, token: string, success: boolean) =>
    report([
      {
        dep,
        requests: 0,
        successes: success ? 1 : 0,
        failures: success ? 0 : 1,
        slow: 0,
        probes: [{ token, success }],
      },
    ]);
  const admit = (dep: string, body?: object) => {
    const req = request(server).post(`/v1/shop/deps/${dep}/admit`).set(client);
    return body === undefined ? req : req.send(body);
  };
  const retry = (dep: string) =>
    request(server).post(`/v1/shop/deps/${dep}/retry`).set(client).send({ attempt: 1, idempotent: true, status: 503 });
  const view = (dep: string) => request(server).get(`/v1/shop/deps/${dep}`).set(client);
  const act = (dep: string, action: 'trip' | 'force-close' | 'reset', body: object, ns = 'shop') =>
    request(server).post(`/admin/v1/${ns}/breakers/${dep}/${action}`).set(admin).send(body);
  const audit = (query: string) => request(server).get(`/admin/v1/audit${query}`).set(admin);
  const metrics = async () => (await request(server).get('/metrics').expect(200)).text;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: useRedis,
      label: 'breakers-e2e',
      policies: POLICIES,
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] },
    });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('opens on failures, refuses retries and calls, half-opens after openMs, hands out one probe, closes after 2 probe successes', async () => {
    const dep = 'life';
    const before = await view(dep).expect(200);
    expect(before.body.breaker).toMatchObject({ state: 'closed' });

    const opened = await failures(dep).expect(200);
    // The answer says until when it is open (an automatic open: no operator's reason).
    expect(opened.body).toEqual({
      deps: { [dep]: { breaker: { state: 'open', openUntil: expect.any(Number), reason: null }, reporters: 1 } },
    });

    const refusedRetry = await retry(dep).expect(200);
    expect(refusedRetry.body).toMatchObject({ allow: false, reason: 'breaker_open', breaker: { state: 'open' } });

    for (const body of [undefined, {}, { cost: 1 }]) {
      const refused = await admit(dep, body).expect(200);
      expect({ body, answer: refused.body }).toEqual({
        body,
        answer: expect.objectContaining({
          allow: false,
          reason: 'breaker_open',
          breaker: { state: 'open', openUntil: expect.any(Number), reason: null },
        }),
      });
      expect(refused.body.retryAfterMs).toBeGreaterThan(0);
      expect(refused.body.retryAfterMs).toBeLessThanOrEqual(OPEN_MS);
      expect(refused.body.probe).toBeUndefined();
    }

    const openView = await view(dep).expect(200);
    const { since, openUntil } = openView.body.breaker;
    expect(openView.body.breaker).toMatchObject({
      state: 'open',
      since: expect.any(Number),
      openUntil: expect.any(Number),
    });
    expect(openUntil - since).toBe(OPEN_MS);
    expect(Math.abs(since - Date.now())).toBeLessThan(2000);
    expect(openView.headers.etag).toMatch(/^".+"$/);
    expect(openView.headers.etag).not.toBe(before.headers.etag);
    await view(dep).set('if-none-match', openView.headers.etag).expect(304);

    await waitPast(openUntil);

    const probed = await admit(dep).expect(200);
    expect(probed.body).toMatchObject({
      allow: true,
      reason: 'granted',
      breaker: { state: 'half_open' },
      probe: { token: expect.any(String), expiresAt: expect.any(Number) },
    });
    const firstToken: string = probed.body.probe.token;
    expect(firstToken.length).toBeGreaterThan(0);
    expect(probed.body.probe.expiresAt).toBeGreaterThan(Date.now() - 1000);
    expect(probed.body.probe.expiresAt).toBeLessThanOrEqual(Date.now() + PROBE_LEASE_MS + 1000);

    const second = await admit(dep).expect(200);
    expect(second.body).toMatchObject({ allow: false, reason: 'breaker_open', breaker: { state: 'half_open' } });
    expect(second.body.probe).toBeUndefined();
    expect((await retry(dep).expect(200)).body).toMatchObject({ allow: false, reason: 'breaker_open' });

    // Half-open has no end: it lasts until the probes decide.
    const halfOpenView = await view(dep).expect(200);
    expect(halfOpenView.body.breaker).toMatchObject({ state: 'half_open', since: openUntil, openUntil: null });

    const oneSuccess = await probeOutcome(dep, firstToken, true).expect(200);
    expect(oneSuccess.body.deps[dep].breaker.state).toBe('half_open');
    // A token already reported (or never handed out) counts for nothing.
    expect((await probeOutcome(dep, firstToken, true).expect(200)).body.deps[dep].breaker.state).toBe('half_open');
    expect((await probeOutcome(dep, 'not-a-probe', true).expect(200)).body.deps[dep].breaker.state).toBe('half_open');

    const next = await admit(dep).expect(200);
    expect(next.body).toMatchObject({
      allow: true,
      breaker: { state: 'half_open' },
      probe: { token: expect.any(String) },
    });
    expect(next.body.probe.token).not.toBe(firstToken);

    const closed = await probeOutcome(dep, next.body.probe.token, true).expect(200);
    expect(closed.body).toEqual({ deps: { [dep]: { breaker: { state: 'closed' }, reporters: 1 } } });

    expect((await retry(dep).expect(200)).body).toMatchObject({
      allow: true,
      reason: 'granted',
      breaker: { state: 'closed' },
    });
    expect((await admit(dep, {}).expect(200)).body).toMatchObject({
      allow: true,
      reason: 'granted',
      breaker: { state: 'closed' },
    });
    expect((await view(dep).expect(200)).body.breaker.state).toBe('closed');

    const text = await metrics();
    for (const [from, to] of [
      ['closed', 'open'],
      ['open', 'half_open'],
      ['half_open', 'closed'],
    ]) {
      expect(text).toContain(
        `sluice_breaker_transitions_total{namespace="shop",dependency="${dep}",from="${from}",to="${to}"} 1`,
      );
    }
  });

  it('reopens on a failed probe with the open duration doubled, capped at maxOpenMs', async () => {
    const dep = 'reopen';
    expect((await failures(dep).expect(200)).body.deps[dep].breaker.state).toBe('open');
    let breaker = (await view(dep).expect(200)).body.breaker;
    expect(breaker.openUntil - breaker.since).toBe(OPEN_MS);

    // Doubled once, then capped.
    for (const expected of [2 * OPEN_MS, MAX_OPEN_MS]) {
      await waitPast(breaker.openUntil);
      const probed = await admit(dep).expect(200);
      expect(probed.body).toMatchObject({
        allow: true,
        breaker: { state: 'half_open' },
        probe: { token: expect.any(String) },
      });
      const reopened = await probeOutcome(dep, probed.body.probe.token, false).expect(200);
      expect(reopened.body.deps[dep].breaker.state).toBe('open');
      breaker = (await view(dep).expect(200)).body.breaker;
      expect({ expected, state: breaker.state, openFor: breaker.openUntil - breaker.since }).toEqual({
        expected,
        state: 'open',
        openFor: expected,
      });
      const refused = await admit(dep).expect(200);
      expect(refused.body).toMatchObject({ allow: false, reason: 'breaker_open' });
      expect(refused.body.retryAfterMs).toBeGreaterThan(0);
      expect(refused.body.retryAfterMs).toBeLessThanOrEqual(expected);
    }
    expect(await metrics()).toContain(
      `sluice_breaker_transitions_total{namespace="shop",dependency="${dep}",from="half_open",to="open"} 2`,
    );
  });

  it('lets an operator trip, force-close and reset a breaker fleet-wide, and rejects bad actions without a change', async () => {
    const dep = 'tripped';
    const tripped = await act(dep, 'trip', { reason: 'bad deploy' }).expect(200);
    expect(tripped.body).toEqual({
      dependency: dep,
      state: 'forced_open',
      since: expect.any(Number),
      openUntil: null,
      reason: 'bad deploy',
      known: false,
    });
    expect((await retry(dep).expect(200)).body).toMatchObject({
      allow: false,
      reason: 'breaker_open',
      breaker: { state: 'forced_open' },
    });
    for (const body of [undefined, {}, { cost: 1 }]) {
      const refused = await admit(dep, body).expect(200);
      expect(refused.body).toMatchObject({ allow: false, reason: 'breaker_open', breaker: { state: 'forced_open' } });
      expect(refused.body.probe).toBeUndefined();
    }
    // A report's answer carries the operator's reason too, so a client that learns the trip from it can say why.
    const reported = await report([{ dep, requests: 1, successes: 1, failures: 0, slow: 0 }]).expect(200);
    expect(reported.body.deps[dep].breaker).toEqual({ state: 'forced_open', openUntil: null, reason: 'bad deploy' });
    // Forced open never half-opens by itself.
    expect((await view(dep).expect(200)).body.breaker).toMatchObject({ state: 'forced_open', openUntil: null });

    const listed = await request(server).get('/admin/v1/shop/breakers').set(admin).expect(200);
    expect(listed.body.items).toContainEqual({
      dependency: dep,
      state: 'forced_open',
      since: tripped.body.since,
      openUntil: null,
      reason: 'bad deploy',
    });

    // Bad input: 400 naming the field, and the breaker is untouched.
    const cases: Array<[string, 'trip' | 'force-close', object]> = [
      ['reason', 'trip', {}],
      ['reason', 'trip', { durationSeconds: 60 }],
      ['reason', 'force-close', { durationSeconds: 60 }],
      ['reason', 'trip', { reason: '' }],
      ['durationSeconds', 'trip', { reason: 'x', durationSeconds: 0 }],
      ['durationSeconds', 'trip', { reason: 'x', durationSeconds: '10' }],
      ['durationSeconds', 'force-close', { reason: 'x', durationSeconds: 0 }],
      ['durationSeconds', 'force-close', { reason: 'x', durationSeconds: '10' }],
    ];
    for (const [field, action, body] of cases) {
      const res = await act(dep, action, body);
      expect({ action, body, status: res.status, code: res.body.code }).toEqual({
        action,
        body,
        status: 400,
        code: 'validation_failed',
      });
      expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
    expect((await view(dep).expect(200)).body.breaker).toMatchObject({
      state: 'forced_open',
      since: tripped.body.since,
      openUntil: null,
    });

    const closedByHand = await act(dep, 'force-close', { reason: 'canary is fine', durationSeconds: 60 }).expect(200);
    expect(closedByHand.body).toMatchObject({ dependency: dep, state: 'forced_closed', reason: 'canary is fine' });
    expect(closedByHand.body.openUntil - closedByHand.body.since).toBe(60_000);
    expect(Math.abs(closedByHand.body.openUntil - (Date.now() + 60_000))).toBeLessThan(2000);

    const ignored = await failures(dep).expect(200);
    expect(ignored.body.deps[dep].breaker.state).toBe('forced_closed');
    expect((await failures(dep).expect(200)).body.deps[dep].breaker.state).toBe('forced_closed');
    expect((await admit(dep).expect(200)).body).toMatchObject({
      allow: true,
      reason: 'granted',
      breaker: { state: 'forced_closed' },
    });
    expect((await retry(dep).expect(200)).body).toMatchObject({
      allow: true,
      reason: 'granted',
      breaker: { state: 'forced_closed' },
    });

    const reset = await act(dep, 'reset', {}).expect(200);
    expect(reset.body).toMatchObject({ dependency: dep, state: 'closed', openUntil: null, reason: null });
    // Reset is automatic closed, with nothing left of the forced state: no end, no reason, a fresh window.
    const afterReset = await view(dep).expect(200);
    const relisted = await request(server).get('/admin/v1/shop/breakers').set(admin).expect(200);
    const listedAfterReset = relisted.body.items.find((item: { dependency: string }) => item.dependency === dep);
    expect({ view: afterReset.body.breaker, listed: listedAfterReset }).toEqual({
      view: expect.objectContaining({ state: 'closed', since: reset.body.since, openUntil: null, calls: 0 }),
      listed: { dependency: dep, state: 'closed', since: reset.body.since, openUntil: null, reason: null },
    });
    expect((await admit(dep).expect(200)).body).toMatchObject({ allow: true, breaker: { state: 'closed' } });
  });

  it('keeps a trip without duration forced open past the end of an earlier forced state', async () => {
    const dep = 'tripped-after-close';
    const closedByHand = await act(dep, 'force-close', { reason: 'brief', durationSeconds: 1 }).expect(200);
    expect(closedByHand.body).toMatchObject({ state: 'forced_closed' });
    const tripped = await act(dep, 'trip', { reason: 'until reset' }).expect(200);
    expect(tripped.body).toMatchObject({ state: 'forced_open', openUntil: null, reason: 'until reset' });
    await waitPast(closedByHand.body.openUntil);
    const admitted = await admit(dep).expect(200);
    const viewed = await view(dep).expect(200);
    const listed = await request(server).get('/admin/v1/shop/breakers').set(admin).expect(200);
    expect({
      admit: admitted.body,
      view: viewed.body.breaker,
      listed: listed.body.items.find((item: { dependency: string }) => item.dependency === dep),
    }).toEqual({
      admit: expect.objectContaining({
        allow: false,
        reason: 'breaker_open',
        breaker: { state: 'forced_open', openUntil: null, reason: 'until reset' },
      }),
      view: expect.objectContaining({ state: 'forced_open', since: tripped.body.since, openUntil: null }),
      listed: {
        dependency: dep,
        state: 'forced_open',
        since: tripped.body.since,
        openUntil: null,
        reason: 'until reset',
      },
    });
  });

  it('trips for a duration, then lapses back to closed on its own', async () => {
    const dep = 'tripped-briefly';
    const tripped = await act(dep, 'trip', { reason: 'maintenance', durationSeconds: 1 }).expect(200);
    expect(tripped.body).toMatchObject({ state: 'forced_open', reason: 'maintenance' });
    expect(tripped.body.openUntil - tripped.body.since).toBe(1000);
    expect((await admit(dep).expect(200)).body).toMatchObject({ allow: false, reason: 'breaker_open' });
    await waitPast(tripped.body.openUntil);
    expect((await admit(dep).expect(200)).body).toMatchObject({ allow: true, breaker: { state: 'closed' } });
  });

  it('lists every dependency budget of the namespace, with exhausted when the retries reach the limit', async () => {
    await report([
      { dep: 'stingy', requests: 20, successes: 20, failures: 0, slow: 0 },
      { dep: 'roomy', requests: 50, successes: 50, failures: 0, slow: 0 },
    ]).expect(200);
    // stingy: floor(0.1 × 20 + 0 × 10) = 2.
    expect((await retry('stingy').expect(200)).body).toMatchObject({ allow: true, budget: { limit: 2 } });
    expect((await retry('stingy').expect(200)).body).toMatchObject({ allow: true, budget: { retries: 2, limit: 2 } });
    expect((await retry('stingy').expect(200)).body).toMatchObject({ allow: false, reason: 'budget_exhausted' });
    await retry('roomy').expect(200);

    const budgets = await request(server).get('/admin/v1/shop/budgets').set(admin).expect(200);
    // An adaptive budget (the default): no retry reported as succeeded, a cap at maxRatio 0.5.
    expect(budgets.body.items).toContainEqual({
      dependency: 'stingy',
      retries: 2,
      retriesSucceeded: 0,
      requests: 20,
      limit: 2,
      cap: Math.floor(0.5 * 20),
      exhausted: true,
    });
    expect(budgets.body.items).toContainEqual({
      dependency: 'roomy',
      retries: 1,
      retriesSucceeded: 0,
      requests: 50,
      limit: Math.floor(0.1 * 50 + 10 * 10),
      cap: Math.floor(0.5 * 50 + 10 * 10),
      exhausted: false,
    });
    for (const item of budgets.body.items) {
      expect(item).toEqual({
        dependency: expect.any(String),
        retries: expect.any(Number),
        retriesSucceeded: expect.any(Number),
        requests: expect.any(Number),
        limit: expect.any(Number),
        cap: expect.any(Number),
        exhausted: expect.any(Boolean),
      });
    }
  });

  it('keeps client tokens out of the admin API and other namespaces, and needs a token on admin routes', async () => {
    const dep = 'guarded';
    await report([{ dep, requests: 5, successes: 5, failures: 0, slow: 0 }]).expect(200);
    const adminRoutes: Array<[string, 'get' | 'post', string, object | undefined]> = [
      ['GET breakers', 'get', '/admin/v1/shop/breakers', undefined],
      ['GET budgets', 'get', '/admin/v1/shop/budgets', undefined],
      ['trip', 'post', `/admin/v1/shop/breakers/${dep}/trip`, { reason: 'client tries' }],
      ['force-close', 'post', `/admin/v1/shop/breakers/${dep}/force-close`, { reason: 'client tries' }],
      ['reset', 'post', `/admin/v1/shop/breakers/${dep}/reset`, {}],
      ['GET audit', 'get', '/admin/v1/audit', undefined],
      ['GET audit of shop', 'get', '/admin/v1/audit?ns=shop', undefined],
    ];
    const send = (method: 'get' | 'post', path: string, body: object | undefined, headers: object) => {
      const req = request(server)
        [method](path)
        .set(headers as Record<string, string>);
      return body === undefined ? req : req.send(body);
    };
    for (const [name, method, path, body] of adminRoutes) {
      const forbidden = await send(method, path, body, client);
      expect({ name, status: forbidden.status, code: forbidden.body.code }).toEqual({
        name,
        status: 403,
        code: 'forbidden',
      });
      const anonymous = await send(method, path, body, {});
      expect({ name, status: anonymous.status, code: anonymous.body.code }).toEqual({
        name,
        status: 401,
        code: 'unauthorized',
      });
      const unknown = await send(method, path, body, { authorization: 'Bearer not-a-token' });
      expect({ name, status: unknown.status, code: unknown.body.code }).toEqual({
        name,
        status: 401,
        code: 'unauthorized',
      });
    }
    // None of the refused actions touched the breaker or reached the audit log.
    expect((await view(dep).expect(200)).body.breaker.state).toBe('closed');
    const log = await audit('?ns=shop&limit=1000').expect(200);
    expect(log.body.items.filter((entry: { target: string }) => entry.target === dep)).toEqual([]);
    expect(log.body.items.filter((entry: { actor: string }) => entry.actor === SHOP_TOKEN.id)).toEqual([]);

    const otherNamespace: Array<[string, 'get' | 'post', string, object | undefined]> = [
      ['retry', 'post', `/v1/other/deps/${dep}/retry`, { attempt: 1, idempotent: true }],
      ['admit', 'post', `/v1/other/deps/${dep}/admit`, {}],
      ['reports', 'post', '/v1/other/reports', { reporter: 'pod-a', deps: [] }],
      ['view', 'get', `/v1/other/deps/${dep}`, undefined],
    ];
    for (const [name, method, path, body] of otherNamespace) {
      const forbidden = await send(method, path, body, client);
      expect({ name, status: forbidden.status, code: forbidden.body.code }).toEqual({
        name,
        status: 403,
        code: 'forbidden',
      });
      const asAdmin = await send(method, path, body, admin);
      expect({ name, status: asAdmin.status }).toEqual({ name, status: 200 });
    }

    // The admin token works on every admin route.
    const adminOk: Array<[string, 'get' | 'post', string, object | undefined]> = [
      ['GET breakers', 'get', '/admin/v1/shop/breakers', undefined],
      ['GET budgets', 'get', '/admin/v1/shop/budgets', undefined],
      ['trip', 'post', `/admin/v1/shop/breakers/${dep}/trip`, { reason: 'admin tries' }],
      ['force-close', 'post', `/admin/v1/shop/breakers/${dep}/force-close`, { reason: 'admin tries' }],
      ['reset', 'post', `/admin/v1/shop/breakers/${dep}/reset`, {}],
      ['GET audit', 'get', '/admin/v1/audit', undefined],
      ['GET audit of shop', 'get', '/admin/v1/audit?ns=shop', undefined],
      ['GET breakers of other', 'get', '/admin/v1/other/breakers', undefined],
    ];
    for (const [name, method, path, body] of adminOk) {
      const res = await send(method, path, body, admin);
      expect({ name, status: res.status }).toEqual({ name, status: 200 });
    }
  });

  it('writes every admin action to the audit log, by namespace, oldest first, bounded by limit', async () => {
    const dep = 'audited';
    await act(dep, 'trip', { reason: 'bad deploy', durationSeconds: 600 }).expect(200);
    await act(dep, 'force-close', { reason: 'canary is fine' }).expect(200);
    await act(dep, 'reset', {}).expect(200);
    await act(dep, 'trip', { reason: 'again' }).expect(200);
    await act(dep, 'reset', { reason: 'recovered' }).expect(200);
    await act(dep, 'trip', { reason: 'elsewhere' }, 'other').expect(200);

    const shop = await audit('?ns=shop&limit=1000').expect(200);
    const mine = shop.body.items.filter((entry: { target: string }) => entry.target === dep);
    const entry = (action: string, reason: string | null, durationMs: number | null = null) => ({
      at: expect.any(Number),
      actor: ADMIN_TOKEN.id,
      action,
      namespace: 'shop',
      target: dep,
      reason,
      durationMs,
      endsAt: durationMs === null ? null : expect.any(Number),
    });
    expect(mine).toEqual([
      // A trip for ten minutes says so, and until when.
      entry('breaker.trip', 'bad deploy', 600_000),
      entry('breaker.force_close', 'canary is fine'),
      entry('breaker.reset', null),
      entry('breaker.trip', 'again'),
      entry('breaker.reset', 'recovered'),
    ]);
    const [timedTrip] = mine as Array<{ at: number; endsAt: number }>;
    expect(timedTrip.endsAt).toBeGreaterThanOrEqual(timedTrip.at + 600_000 - 1000);
    expect(timedTrip.endsAt).toBeLessThanOrEqual(timedTrip.at + 600_000);
    const times = mine.map((entry: { at: number }) => entry.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.abs(times[0] - Date.now())).toBeLessThan(5000);
    expect(shop.body.items.every((entry: { namespace: string }) => entry.namespace === 'shop')).toBe(true);

    const other = await audit('?ns=other').expect(200);
    expect(other.body.items).toContainEqual(
      expect.objectContaining({ action: 'breaker.trip', namespace: 'other', target: dep, reason: 'elsewhere' }),
    );
    expect(other.body.items.every((entry: { namespace: string }) => entry.namespace === 'other')).toBe(true);

    // The newest entries are kept, oldest first.
    const lastTwo = await audit('?ns=shop&limit=2').expect(200);
    expect(lastTwo.body.items.map((entry: { action: string; reason: string }) => [entry.action, entry.reason])).toEqual(
      [
        ['breaker.trip', 'again'],
        ['breaker.reset', 'recovered'],
      ],
    );
    const newest = await audit('?limit=1').expect(200);
    expect(newest.body.items).toEqual([expect.objectContaining({ namespace: 'other', reason: 'elsewhere' })]);
    const all = await audit('').expect(200);
    expect(all.body.items.length).toBeGreaterThanOrEqual(mine.length + 1);

    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=abc', 'limit'],
      ['?limit=1001', 'limit'],
      ['?ns=Not_A_Namespace', 'ns'],
    ]) {
      const res = await audit(query);
      expect({ query, status: res.status, code: res.body.code }).toEqual({
        query,
        status: 400,
        code: 'validation_failed',
      });
      expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
  });

  it('exposes breaker state, transitions and admin actions as metrics', async () => {
    const dep = 'metered';
    await failures(dep).expect(200);
    let text = await metrics();
    for (const state of BREAKER_STATES) {
      expect(text).toContain(
        `sluice_breaker_state{namespace="shop",dependency="${dep}",state="${state}"} ${state === 'open' ? 1 : 0}`,
      );
    }
    expect(text).toContain(
      `sluice_breaker_transitions_total{namespace="shop",dependency="${dep}",from="closed",to="open"} 1`,
    );

    /** Trips counted so far (earlier tests of this app trip too): 0 before the first. */
    const tripsCounted = (metricsText: string) =>
      Number(/^sluice_admin_actions_total\{action="breaker\.trip"\} (\d+)$/m.exec(metricsText)?.[1] ?? 0);
    const tripsBefore = tripsCounted(text);
    await act('metered-trip', 'trip', { reason: 'metrics' }).expect(200);
    text = await metrics();
    expect(tripsCounted(text)).toBe(tripsBefore + 1);
    expect(text).toContain(`sluice_breaker_state{namespace="shop",dependency="metered-trip",state="forced_open"} 1`);
    expect(text).toContain(`sluice_breaker_state{namespace="shop",dependency="metered-trip",state="closed"} 0`);
    expect(text).toContain(
      `sluice_breaker_transitions_total{namespace="shop",dependency="metered-trip",from="closed",to="forced_open"} 1`,
    );
  });
});
