import { REQUEST_ID_PATTERN, type DependencyView } from '@sluice/protocol';
import { CoordinatorClient, Sluice, deliveries, type FallbackChange } from '@sluice/client';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import {
  OVERLOADED,
  STORE_UNAVAILABLE,
  startScriptedProxy,
  type ProxyAnswer,
  type ScriptedProxy,
} from '../support/scripted-proxy';
import { QUICK_BACKOFF, failure, retryDecisions } from '../support/sdk';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * "A 503 hides nothing" and "overload is said as overload", from the SDK's side: every
 * state-changing call carries a caller-chosen id, a call that got no answer is asked again with
 * the same id, and a 503 `overloaded` moves the call to another instance without counting toward
 * the local fallback. Scripted proxies in front of a real coordinator see what the SDK sends and
 * answer for it when told to.
 */
describe('the SDK sends caller-chosen ids and asks again with them', () => {
  let coordinator: TestCoordinator;
  let proxy: ScriptedProxy;
  let server: FlakyServer;
  const clients: Sluice[] = [];

  beforeAll(async () => {
    coordinator = await testCoordinator({
      listen: true,
      config: { sseHeartbeatMs: 1000 },
      policies: {
        namespaces: {
          shop: {
            dependencies: {
              stock: { ...QUICK_BACKOFF, breaker: { minimumCalls: 1000 } },
              // A rate limit: every attempt asks admit first.
              metered: { ...QUICK_BACKOFF, rateLimit: { rate: 1000, periodMs: 1000, burst: 100 } },
            },
            limits: { exports: { rate: 100, periodMs: 1000, burst: 10 } },
            queues: { orders: { maxAttempts: 5 } },
          },
        },
      },
    });
    proxy = await startScriptedProxy(coordinator.url);
    server = await startFlakyServer();
  });
  afterEach(async () => {
    proxy.script(() => 'forward');
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  afterAll(async () => {
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  /** A client through the proxy; decisions may take long here (a loaded machine), nothing is timed. */
  const client = () => {
    const sluice = new Sluice({ baseUrls: [proxy.url], namespace: 'shop', logger: false, decisionTimeoutMs: 2000 });
    clients.push(sluice);
    return sluice;
  };
  const coordinatorClient = () => new CoordinatorClient({ baseUrl: proxy.url, namespace: 'shop' });
  /** Answers the first request whose line ends with `suffix` with `first`, and forwards everything else. */
  const firstOf = (suffix: string, first: ProxyAnswer) => {
    let done = false;
    proxy.script((line) => {
      if (done || !line.endsWith(suffix)) return 'forward';
      done = true;
      return first;
    });
  };
  const ids = (match: RegExp, field = 'requestId') => proxy.bodies(match).map((body) => body[field]);

  it('sends a requestId with every retry and admit, a claimId with every claim, a requestId with every take', async () => {
    const sluice = client();
    server.plan([fail(503)], ok());
    expect((await sluice.dependency('stock').fetch(`${server.url}/stock/1`, { method: 'PUT' })).status).toBe(200);
    server.plan([fail(503)], ok());
    expect((await sluice.dependency('metered').fetch(`${server.url}/metered/1`)).status).toBe(200);

    const coordinatorApi = coordinatorClient();
    await expect(coordinatorApi.claimIdempotencyKey('ids-order-1', { fingerprint: 'f' })).resolves.toMatchObject({
      state: 'claimed',
    });
    await expect(coordinatorApi.takeLimit('exports', { key: 'user-1' })).resolves.toMatchObject({ allow: true });

    const retries = ids(/\/deps\/(stock|metered)\/retry$/);
    const admits = ids(/\/deps\/metered\/admit$/);
    const claims = ids(/\/idempotency\/ids-order-1\/claim$/, 'claimId');
    const takes = ids(/\/limits\/exports\/take$/);
    expect([retries.length, admits.length, claims.length, takes.length]).toEqual([2, 2, 1, 1]);
    const all = [...retries, ...admits, ...claims, ...takes];
    for (const id of all) expect(id).toMatch(REQUEST_ID_PATTERN);
    expect(new Set(all).size).toBe(all.length);
  });

  it('records a failed delivery as the broker delivery count', async () => {
    const orders = deliveries(coordinatorClient(), 'orders');
    const outcome = await orders.handle({ id: 'ids-m-1', payload: { n: 1 }, deliveryCount: 2 }, () =>
      Promise.reject(new Error('boom')),
    );
    expect(outcome).toMatchObject({ status: 'retry', ack: false });
    expect(proxy.bodies(/\/queues\/orders\/attempts$/)).toEqual([
      { messageId: 'ids-m-1', error: 'Error: boom', payload: { n: 1 }, attempt: 2 },
    ]);
    expect(ids(/\/idempotency\/dlv%3Aorders%3Aids-m-1\/claim$/, 'claimId')[0]).toMatch(REQUEST_ID_PATTERN);
  });

  it('asks a retry decision again with the same requestId after a 503 store_unavailable, and after a dropped exchange', async () => {
    const sluice = client();
    const stock = sluice.dependency('stock');
    const granted = await retryDecisions(coordinator.url, 'stock', 'granted');
    for (const [n, first] of [STORE_UNAVAILABLE, 'drop'].entries()) {
      firstOf('/deps/stock/retry', first as ProxyAnswer);
      server.plan([fail(503)], ok());
      const before = proxy.bodies(/\/deps\/stock\/retry$/).length;
      expect((await stock.fetch(`${server.url}/again/${n}`, { method: 'PUT' })).status).toBe(200);
      const asked = ids(/\/deps\/stock\/retry$/).slice(before);
      expect(asked).toHaveLength(2);
      expect(asked[1]).toBe(asked[0]);
    }
    // Each call's retry was decided once, on its second exchange.
    expect(await retryDecisions(coordinator.url, 'stock', 'granted')).toBe(granted + 2);
    expect(sluice.fallbackActive).toBe(false);
  });

  it('asks an admit again with the same requestId after a dropped exchange', async () => {
    const metered = client().dependency('metered');
    server.plan([], ok());
    expect((await metered.fetch(`${server.url}/metered/first`)).status).toBe(200);
    const before = proxy.bodies(/\/deps\/metered\/admit$/).length;
    firstOf('/deps/metered/admit', 'drop');
    expect((await metered.fetch(`${server.url}/metered/again`)).status).toBe(200);
    const asked = ids(/\/deps\/metered\/admit$/).slice(before);
    expect(asked).toHaveLength(2);
    expect(asked[1]).toBe(asked[0]);
  });

  it('asks a claim, a take and a delivery attempt again with the same id after a 503 or a dropped exchange', async () => {
    const coordinatorApi = coordinatorClient();
    firstOf('/claim', STORE_UNAVAILABLE);
    await expect(coordinatorApi.claimIdempotencyKey('again-order-1', { fingerprint: 'f' })).resolves.toMatchObject({
      state: 'claimed',
    });
    const claims = ids(/\/idempotency\/again-order-1\/claim$/, 'claimId');
    expect(claims).toHaveLength(2);
    expect(claims[1]).toBe(claims[0]);

    firstOf('/take', 'drop');
    await expect(coordinatorApi.takeLimit('exports', { key: 'user-2' })).resolves.toMatchObject({ allow: true });
    const takes = ids(/\/limits\/exports\/take$/).slice(-2);
    expect(
      proxy.seen
        .filter((entry) => entry.line.endsWith('/take'))
        .slice(-2)
        .map((entry) => entry.answer),
    ).toEqual(['drop', 'forward']);
    expect(takes[1]).toBe(takes[0]);

    firstOf('/attempts', STORE_UNAVAILABLE);
    const outcome = await deliveries(coordinatorApi, 'orders').handle({ id: 'again-m-1', deliveryCount: 1 }, () =>
      Promise.reject(new Error('boom')),
    );
    expect(outcome).toMatchObject({ status: 'retry', attempt: 1 });
    const attempts = proxy.bodies(/\/queues\/orders\/attempts$/).filter((body) => body.messageId === 'again-m-1');
    expect(attempts.map((body) => body.attempt)).toEqual([1, 1]);
  });

  it('an answer lost after the coordinator acted: asked again with the same id, the first outcome comes back', async () => {
    const budgetRetries = async () =>
      ((await (await fetch(`${coordinator.url}/v1/shop/deps/stock`)).json()) as DependencyView).budget.retries;
    const stock = client().dependency('stock');
    const before = await budgetRetries();
    firstOf('/deps/stock/retry', 'lose');
    server.plan([fail(503)], ok());
    expect((await stock.fetch(`${server.url}/lost/1`, { method: 'PUT' })).status).toBe(200);
    const asked = ids(/\/deps\/stock\/retry$/).slice(-2);
    expect(asked[1]).toBe(asked[0]);
    // The retry was granted once, and counted once in the fleet's budget.
    expect(await budgetRetries()).toBe(before + 1);

    // A claim whose answer was lost: asked again, it is the caller's own claim, with the same token.
    const coordinatorApi = coordinatorClient();
    firstOf('/claim', 'lose');
    const claim = await coordinatorApi.claimIdempotencyKey('lost-order-1', { fingerprint: 'f' });
    expect(claim).toMatchObject({ state: 'claimed', resumed: true });
    // Held once: another request with the key waits for it.
    await expect(coordinatorApi.claimIdempotencyKey('lost-order-1', { fingerprint: 'f' })).resolves.toMatchObject({
      state: 'in_flight',
    });
    if (claim.state === 'claimed') await coordinatorApi.releaseIdempotencyKey('lost-order-1', claim.token);
  });
});

describe('an overloaded instance sheds a call: another instance answers, and the fallback is not for overload', () => {
  let coordinator: TestCoordinator;
  /** Two instances in front of one coordinator. */
  let a: ScriptedProxy;
  let b: ScriptedProxy;
  let server: FlakyServer;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      listen: true,
      config: { sseHeartbeatMs: 1000 },
      policies: {
        namespaces: { shop: { dependencies: { stock: { ...QUICK_BACKOFF, breaker: { minimumCalls: 1000 } } } } },
      },
    });
    [a, b] = await Promise.all([startScriptedProxy(coordinator.url), startScriptedProxy(coordinator.url)]);
    server = await startFlakyServer();
  });
  afterAll(async () => {
    await server.close();
    await Promise.all([a.close(), b.close()]);
    await coordinator.close();
  });

  it('moves a shed retry decision to the other instance, never switches on overload, and still switches on store_unavailable', async () => {
    const sluice = new Sluice({
      baseUrls: [a.url, b.url],
      namespace: 'shop',
      logger: false,
      decisionTimeoutMs: 2000,
      reportIntervalMs: 50,
      pollIntervalMs: 100,
      failuresBeforeFallback: 3,
    });
    const switches: FallbackChange[] = [];
    sluice.onFallback((change) => switches.push(change));
    const stock = sluice.dependency('stock', {
      idempotent: true,
      fallbackPolicy: { backoff: { baseMs: 1, capMs: 5, jitter: 'full' }, breaker: { minimumCalls: 1000 } },
    });

    // a sheds retry decisions: the call's retry is decided by b, under the same requestId.
    a.script((line) => (line.endsWith('/retry') ? OVERLOADED : 'forward'));
    server.plan([fail(503)], ok());
    expect((await stock.fetch(`${server.url}/shed/1`)).status).toBe(200);
    const shed = a.bodies(/\/retry$/);
    expect(shed).toHaveLength(1);
    expect(b.bodies(/\/retry$/).map((body) => body.requestId)).toEqual([shed[0].requestId]);

    // Both shed everything for a while: no retry without a grant, and no switch to the fallback.
    a.script(() => OVERLOADED);
    b.script(() => OVERLOADED);
    const shedAnswers = () => [...a.seen, ...b.seen].filter((entry) => entry.answer === '503 overloaded').length;
    const before = shedAnswers();
    server.plan([], fail(503));
    for (let i = 0; i < 10; i++) {
      const error = await failure(stock.fetch(`${server.url}/overloaded/${i}`));
      expect([error.reason, error.attempts]).toEqual(['coordinator_unavailable', 1]);
    }
    await sluice.flush(); // a report meets the overload too
    expect(shedAnswers() - before).toBeGreaterThanOrEqual(21);
    expect(sluice.fallbackActive).toBe(false);
    expect(switches).toEqual([]);

    // Their store stops answering: that counts, and after three failures in a row the fallback decides.
    a.script(() => STORE_UNAVAILABLE);
    b.script(() => STORE_UNAVAILABLE);
    let calls = 0;
    while (!sluice.fallbackActive && calls < 3) {
      calls++;
      await failure(stock.fetch(`${server.url}/store/${calls}`));
    }
    expect(sluice.fallbackActive).toBe(true);
    expect(switches).toEqual([expect.objectContaining({ active: true })]);
    // The local fallback grants the retries now.
    const local = await failure(stock.fetch(`${server.url}/local`));
    expect([local.reason, local.attempts]).toEqual(['max_attempts', 3]);

    a.script(() => 'forward');
    b.script(() => 'forward');
    await waitUntil(
      () => !sluice.fallbackActive,
      5000,
      () => 'the SDK never returned to the coordinator',
    );
    await sluice.close();
  });
});
