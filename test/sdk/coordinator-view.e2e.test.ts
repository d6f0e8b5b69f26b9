import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sluice, type BreakerChange } from '@sluice/client';
import type { DependencyView } from '@sluice/protocol';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { TestCoordinator } from '../support/test-coordinator';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';
import { breakerAction, startShopCoordinator } from '../support/sdk';

describe('polling GET /deps/{dep} with ETags when the event stream is not used', () => {
  let coordinator: TestCoordinator;
  let proxy: CountingProxy;

  beforeAll(async () => {
    coordinator = await startShopCoordinator();
    proxy = await startCountingProxy(coordinator.url);
  });
  afterAll(async () => {
    await proxy.close();
    await coordinator.close();
  });

  it('an unchanged view answers 304; a trip arrives with the next poll', async () => {
    const sluice = new Sluice({
      baseUrls: [proxy.url],
      namespace: 'shop',
      logger: false,
      sse: false,
      pollIntervalMs: 30,
    });
    const catalog = sluice.dependency('catalog');
    const breaks: BreakerChange[] = [];
    catalog.onBreak((change) => breaks.push(change));
    await waitUntil(
      () => proxy.answered.includes('GET /v1/shop/deps/catalog 304'),
      5000,
      () => `no conditional read answered 304: ${proxy.answered.join(', ')}`,
    );
    expect(await breakerAction(coordinator.url, 'catalog', 'trip', 'poll drill')).toBe(200);
    await waitUntil(
      () => breaks.length > 0,
      5000,
      () => 'the trip never arrived by polling',
    );
    expect(breaks[0]).toMatchObject({ to: 'forced_open', source: 'fleet' });
    expect(proxy.count((line) => line === 'GET /v1/shop/events')).toBe(0);
    await sluice.close();
  });
});

describe('parsing the latency a coordinator serves (a fake coordinator, for this parsing test only)', () => {
  let fake: Server;
  let url: string;
  const view: DependencyView = {
    namespace: 'shop',
    dependency: 'search',
    breaker: { state: 'closed', since: null, openUntil: null, reason: null, failureRate: 0, slowRate: 0, calls: 0 },
    budget: { mode: 'adaptive', retries: 0, retriesSucceeded: 0, requests: 0, limit: 100, cap: 100, windowSeconds: 10 },
    reporters: 1,
    usage: { leases: 0, rateRemaining: null },
    latency: { p50: 8, p95: 40, p99: 120, count: 1000 },
    policy: DEFAULT_DEPENDENCY_POLICY,
  };

  beforeAll(async () => {
    fake = createServer((req, res) => {
      if (req.url?.startsWith('/v1/shop/deps/search')) {
        res.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' });
        res.end(JSON.stringify(view));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    fake.closeAllConnections();
    await new Promise<void>((resolve) => fake.close(() => resolve()));
  });

  it("timeout 'auto' is 2 × p99 within its bounds; the p95 hedge waits the fleet's p95", async () => {
    const sluice = new Sluice({ baseUrls: [url], namespace: 'shop', logger: false });
    const search = sluice.dependency('search', { idempotent: true, timeoutMs: 'auto', hedge: { delayMs: 'p95' } });
    await waitUntil(
      () => search.attemptTimeoutMs !== 3000,
      5000,
      () => 'the view was never read',
    );
    expect(search.attemptTimeoutMs).toBe(240);
    expect(search.hedgeDelayMs).toBe(40);
    const tight = sluice.dependency('search', { autoTimeout: { minMs: 10, maxMs: 200 } });
    expect(tight.attemptTimeoutMs).toBe(200);
    await sluice.close();
  });
});

describe('fallback modes with no coordinator at all', () => {
  let server: FlakyServer;
  let nowhere: string;
  beforeAll(async () => {
    server = await startFlakyServer();
    nowhere = `http://127.0.0.1:${await findFreePort()}`;
  });
  afterAll(() => server.close());

  it('fail-closed: first attempts go out, retries do not', async () => {
    const sluice = new Sluice({ baseUrls: [nowhere], namespace: 'shop', logger: false, fallback: 'fail-closed' });
    const dep = sluice.dependency('anything', { idempotent: true });
    server.plan([ok()], fail(503));
    expect((await dep.fetch(`${server.url}/1`)).status).toBe(200);
    await expect(dep.fetch(`${server.url}/2`)).rejects.toMatchObject({
      reason: 'coordinator_unavailable',
      attempts: 1,
    });
    expect(sluice.fallbackActive).toBe(true);
    await sluice.close();
  });

  it('fail-open: retries up to maxAttempts with no budget', async () => {
    const sluice = new Sluice({ baseUrls: [nowhere], namespace: 'shop', logger: false, fallback: 'fail-open' });
    const dep = sluice.dependency('anything', {
      idempotent: true,
      maxAttempts: 4,
      fallbackPolicy: { backoff: { baseMs: 1, capMs: 2 } },
    });
    server.plan([fail(503), fail(503), fail(503)], ok('fourth'));
    expect(await (await dep.fetch(`${server.url}/x`)).text()).toBe('fourth');
    await sluice.close();
  });
});
