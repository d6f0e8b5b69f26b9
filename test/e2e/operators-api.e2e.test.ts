import request from 'supertest';
import type { TokenDefinition } from '../../apps/coordinator/src/config/tokens';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { openEventStream, type SseFrame } from '../support/sse';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/** An operator of the shop namespace only. */
const SHOP_ADMIN: TokenDefinition = {
  id: 'shop-ops',
  secret: 'shop-admin-secret-0123',
  role: 'admin',
  namespaces: ['shop'],
};

/** A breaker for shop that opens after 10 calls. */
const POLICIES = { namespaces: { shop: { default: { breaker: { minimumCalls: 10 } } } } };

// What operators' tools need from the admin API: the namespaces, whether a tripped dependency is
// one any caller uses, and the operator's reason wherever a breaker is shown.
describe.each([
  ['embedded store', false],
  ['Redis', true],
])('the operators\u2019 API (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const admin = bearer(ADMIN_TOKEN);
  const client = bearer(SHOP_TOKEN);

  const report = (ns: string, dep: string, failures = 0) =>
    request(server)
      .post(`/v1/${ns}/reports`)
      .set(admin)
      .send({ reporter: 'pod-a', deps: [{ dep, requests: 10, successes: 10 - failures, failures, slow: 0 }] })
      .expect(200);
  const act = (ns: string, dep: string, action: 'trip' | 'force-close' | 'reset', body: object) =>
    request(server).post(`/admin/v1/${ns}/breakers/${dep}/${action}`).set(admin).send(body).expect(200);
  const retry = (dep: string) =>
    request(server)
      .post(`/v1/shop/deps/${dep}/retry`)
      .set(client)
      .send({ attempt: 1, idempotent: true, status: 503 })
      .expect(200);
  const admit = (dep: string) => request(server).post(`/v1/shop/deps/${dep}/admit`).set(client).expect(200);
  const namespaces = (token = ADMIN_TOKEN) => request(server).get('/admin/v1/namespaces').set(bearer(token));

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: useRedis,
      listen: true,
      label: 'operators-api',
      policies: POLICIES,
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN, SHOP_ADMIN] },
    });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('lists every namespace with state or policies and its dependency count, as far as the token covers', async () => {
    await report('shop', 'payments-api');
    await report('shop', 'inventory');
    await request(server).put('/admin/v1/billing/policies/deps/ledger').set(admin).send({ mode: 'shadow' }).expect(200);
    await act('ops-drill', 'pager', 'trip', { reason: 'drill' });
    const all = await namespaces().expect(200);
    expect(all.body).toEqual({
      items: [
        { namespace: 'billing', dependencies: 1 },
        { namespace: 'ops-drill', dependencies: 1 },
        // The policies file's seeding gives shop its policies, the reports its two dependencies.
        { namespace: 'shop', dependencies: 2 },
      ],
    });
    // A read registers nothing: asking about a namespace does not create it.
    await request(server).get('/admin/v1/nowhere/breakers').set(admin).expect(200);
    expect((await namespaces().expect(200)).body.items.map((item: { namespace: string }) => item.namespace)).toEqual([
      'billing',
      'ops-drill',
      'shop',
    ]);

    const own = await namespaces(SHOP_ADMIN).expect(200);
    expect(own.body).toEqual({ items: [{ namespace: 'shop', dependencies: 2 }] });
    expect((await namespaces(SHOP_TOKEN).expect(403)).body.code).toBe('forbidden');
    expect((await request(server).get('/admin/v1/namespaces').expect(401)).body.code).toBe('unauthorized');
  });

  it('says a trip is of an unknown dependency when no caller has reported or asked for it', async () => {
    await report('shop', 'pricing-api');
    const known = await act('shop', 'pricing-api', 'trip', { reason: 'bad deploy', durationSeconds: 600 });
    expect(known.body).toMatchObject({ dependency: 'pricing-api', state: 'forced_open', known: true });

    const typo = await act('shop', 'pricing-apii', 'trip', { reason: 'bad deploy' });
    expect(typo.body).toEqual({
      dependency: 'pricing-apii',
      state: 'forced_open',
      since: expect.any(Number),
      openUntil: null,
      reason: 'bad deploy',
      known: false,
    });
    // The operator's own actions (again, a force-close, a policy) do not make it known.
    expect((await act('shop', 'pricing-apii', 'trip', { reason: 'again' })).body.known).toBe(false);
    expect((await act('shop', 'pricing-apii', 'force-close', { reason: 'hm' })).body.known).toBe(false);
    await request(server).put('/admin/v1/shop/policies/deps/pricing-apii').set(admin).send({}).expect(200);
    expect((await act('shop', 'pricing-apii', 'reset', {})).body).toMatchObject({ state: 'closed', known: false });
    // A caller's ask does.
    await retry('pricing-apii');
    expect((await act('shop', 'pricing-apii', 'trip', { reason: 'now real' })).body.known).toBe(true);
    await act('shop', 'pricing-apii', 'reset', {});
    await act('shop', 'pricing-api', 'reset', {});
  });

  it('carries the operator\u2019s reason in the breaker list, the dependency view and the event stream', async () => {
    await report('shop', 'search');
    const events = await openEventStream(`${coordinator.url}/v1/shop/events?deps=search`, admin);
    try {
      const isSearch = (state: string) => (frame: SseFrame) =>
        frame.event === 'breaker' && (frame.data as { state: string }).state === state;
      expect((await events.next(isSearch('closed'))).data).toEqual({
        dep: 'search',
        state: 'closed',
        since: null,
        openUntil: null,
        reason: null,
      });
      await act('shop', 'search', 'trip', { reason: 'index rebuild', durationSeconds: 300 });
      expect((await events.next(isSearch('forced_open'))).data).toEqual({
        dep: 'search',
        state: 'forced_open',
        since: expect.any(Number),
        openUntil: expect.any(Number),
        reason: 'index rebuild',
      });

      const list = await request(server).get('/admin/v1/shop/breakers').set(admin).expect(200);
      expect(list.body.items).toContainEqual(
        expect.objectContaining({ dependency: 'search', state: 'forced_open', reason: 'index rebuild' }),
      );
      const view = await request(server).get('/v1/shop/deps/search').set(client).expect(200);
      expect(view.body.breaker).toMatchObject({ state: 'forced_open', reason: 'index rebuild' });

      await act('shop', 'search', 'reset', { reason: 'rebuilt' });
      expect((await events.next(isSearch('closed'))).data).toMatchObject({ state: 'closed', reason: null });
      const after = await request(server).get('/v1/shop/deps/search').set(client).expect(200);
      expect(after.body.breaker).toMatchObject({ state: 'closed', reason: null });
    } finally {
      events.close();
    }
  });

  it('tells a caller denied by an open or forced breaker until when, and the operator\u2019s reason', async () => {
    await report('shop', 'mail');
    expect((await retry('mail')).body.breaker).toEqual({ state: 'closed' });
    expect((await admit('mail')).body.breaker).toEqual({ state: 'closed' });

    const tripped = await act('shop', 'mail', 'trip', { reason: 'provider outage', durationSeconds: 120 });
    const forced = { state: 'forced_open', openUntil: tripped.body.openUntil, reason: 'provider outage' };
    expect((await retry('mail')).body).toMatchObject({ reason: 'breaker_open', breaker: forced });
    expect((await admit('mail')).body).toMatchObject({ reason: 'breaker_open', breaker: forced });
    await act('shop', 'mail', 'trip', { reason: 'until fixed' });
    expect((await admit('mail')).body.breaker).toEqual({
      state: 'forced_open',
      openUntil: null,
      reason: 'until fixed',
    });

    await act('shop', 'mail', 'reset', {});
    await report('shop', 'mail', 10);
    const automatic = { state: 'open', openUntil: expect.any(Number), reason: null };
    expect((await retry('mail')).body.breaker).toEqual(automatic);
    expect((await admit('mail')).body.breaker).toEqual(automatic);
    await act('shop', 'mail', 'reset', {});
  });
});
