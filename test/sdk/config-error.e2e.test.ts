import {
  Sluice,
  isConfigError,
  isHttpStatusError,
  type ConfigErrorEvent,
  type FallbackChange,
  type SluiceOptions,
} from '@sluice/client';
import { SHOP_TOKEN } from '../support/coordinator';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import { QUICK_BACKOFF, failure } from '../support/sdk';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

describe('a coordinator that refuses the token is a configuration error, not an outage', () => {
  let coordinator: TestCoordinator;
  let proxy: CountingProxy;
  let server: FlakyServer;
  const clients: Sluice[] = [];

  beforeAll(async () => {
    coordinator = await testCoordinator({
      listen: true,
      policies: { namespaces: { shop: { default: QUICK_BACKOFF, dependencies: {} } } },
      config: { tokens: [SHOP_TOKEN] },
    });
    proxy = await startCountingProxy(coordinator.url);
    server = await startFlakyServer();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  afterAll(async () => {
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  /** A client of the `shop` namespace through the counting proxy, its log lines kept in `lines`. */
  const client = (options: Partial<SluiceOptions>, lines: string[] = []) => {
    const sluice = new Sluice({
      baseUrls: [proxy.url],
      namespace: 'shop',
      reportIntervalMs: 20,
      pollIntervalMs: 20,
      sse: false,
      // The coordinator runs in this process: a loaded test runner may take longer than 50 ms to answer.
      decisionTimeoutMs: 1000,
      logger: {
        error: (line) => lines.push(`error ${line}`),
        warn: (line) => lines.push(`warn ${line}`),
        info: (line) => lines.push(`info ${line}`),
      },
      ...options,
    });
    clients.push(sluice);
    return sluice;
  };

  it('a wrong token: no fallback, one config error said and logged, ready() rejects naming 401', async () => {
    const lines: string[] = [];
    const sluice = client({ token: 'not-the-right-token-0000' }, lines);
    const switches: FallbackChange[] = [];
    const configErrors: ConfigErrorEvent[] = [];
    sluice.onFallback((change) => switches.push(change));
    sluice.onConfigError((event) => configErrors.push(event));
    const orders = sluice.dependency('orders', { idempotent: true });

    await expect(sluice.ready()).rejects.toThrow(/401/);
    const refused = await sluice.ready().catch((error: unknown) => error);
    expect(isConfigError(refused)).toBe(true);
    expect(refused).toMatchObject({ status: 401, code: 'unauthorized' });
    expect((refused as Error).message).toContain('unknown token');

    // Calls go out once; a failure is not retried without the fleet's grant, and says why.
    server.plan([], ok());
    expect((await orders.fetch(`${server.url}/first`)).status).toBe(200);
    server.plan([], fail(503));
    const sent = server.requests.length;
    const gaveUp = await failure(orders.fetch(`${server.url}/failing`));
    expect([gaveUp.reason, gaveUp.attempts]).toEqual(['config_error', 1]);
    expect(isHttpStatusError(gaveUp.cause)).toBe(true);
    expect(server.requests.length - sent).toBe(1);

    // Many refused exchanges later (reports, view reads, the retry ask), still no fallback.
    const refusedBefore = proxy.seen.length;
    await waitUntil(
      () => proxy.seen.length >= refusedBefore + 10,
      10_000,
      () => 'the client stopped asking the coordinator',
    );
    expect(switches).toEqual([]);
    expect(sluice.fallbackActive).toBe(false);
    expect(configErrors).toHaveLength(1);
    expect(isConfigError(configErrors[0].error)).toBe(true);
    expect(configErrors[0].error.status).toBe(401);
    const status = sluice.status();
    expect(status.mode).toBe('config_error');
    expect(status.configError?.status).toBe(401);
    // One error line in the 30 s, naming the status and the coordinator's message.
    const errorLines = lines.filter((line) => line.startsWith('error '));
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]).toMatch(/401.*unknown token/);
    expect(lines.filter((line) => line.startsWith('warn '))).toEqual([]);
  });

  it('a token of another namespace: ready() rejects naming 403', async () => {
    const sluice = client({ token: SHOP_TOKEN.secret, namespace: 'billing' });
    await expect(sluice.ready()).rejects.toThrow(/403/);
    expect(sluice.status().configError?.status).toBe(403);
  });

  it('verify: true: with a wrong token calls fail with the config error, and the dependency is not called', async () => {
    const sluice = client({ token: 'not-the-right-token-0000', verify: true });
    server.plan([], ok());
    const sent = server.requests.length;
    const error = await sluice.fetch('orders', `${server.url}/verified`).catch((e: unknown) => e);
    expect(isConfigError(error)).toBe(true);
    expect((error as Error).message).toMatch(/401/);
    expect(server.requests.length).toBe(sent);
  });

  it('the right token: ready() resolves, the fleet decides, a failure is retried on its grant', async () => {
    const sluice = client({ token: SHOP_TOKEN.secret, verify: true });
    await sluice.ready();
    expect(sluice.status()).toMatchObject({ mode: 'fleet', fallbackActive: false, configError: undefined });
    server.plan([fail(503)], ok());
    const response = await sluice.fetch('orders', `${server.url}/retried`, { idempotent: true });
    expect(response.status).toBe(200);
    expect(server.requests.filter((request) => request.path === '/retried')).toHaveLength(2);
    expect(proxy.count((line) => line === 'POST /v1/shop/deps/orders/retry')).toBeGreaterThanOrEqual(1);
    expect(sluice.fallbackActive).toBe(false);
  });
});
