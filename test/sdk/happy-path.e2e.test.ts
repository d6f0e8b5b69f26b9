import { Sluice, type BreakerChange } from '@sluice/client';
import type { DependencyView } from '@sluice/protocol';
import type { TestCoordinator } from '../support/test-coordinator';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';
import { breakerAction, metric, startShopCoordinator } from '../support/sdk';

describe('zero hops on the happy path', () => {
  let coordinator: TestCoordinator;
  let proxy: CountingProxy;
  let server: FlakyServer;

  beforeAll(async () => {
    coordinator = await startShopCoordinator();
    proxy = await startCountingProxy(coordinator.url);
    server = await startFlakyServer();
  });
  afterAll(async () => {
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  it('1,000 successful calls send only batched reports and one event stream, no per-call request', async () => {
    const sluice = new Sluice({ baseUrls: [proxy.url], namespace: 'shop', logger: false });
    const inventory = sluice.dependency('inventory');
    server.plan([], ok());
    const started = Date.now();
    for (let i = 0; i < 1000; i++) {
      const response = await inventory.fetch(`${server.url}/items/${i}`);
      await response.arrayBuffer();
    }
    const elapsed = Date.now() - started;
    await sluice.close();

    expect(server.requests).toHaveLength(1000);
    const perCall = proxy.count((line) => /\/(retry|admit)$/.test(line));
    const reports = proxy.count((line) => line === 'POST /v1/shop/reports');
    const streams = proxy.count((line) => line === 'GET /v1/shop/events');
    const views = proxy.count((line) => line === 'GET /v1/shop/deps/inventory');
    expect(perCall).toBe(0);
    expect(streams).toBe(1);
    // The view (policy, latency) is read when the dependency is first used, and re-read every 5 s.
    expect(views).toBeLessThanOrEqual(1 + Math.ceil(elapsed / 5000));
    // One report per ~200 ms interval, plus the one on close.
    expect(reports).toBeGreaterThanOrEqual(1);
    expect(reports).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 2);
    expect(proxy.seen.length).toBe(perCall + reports + streams + views);
    console.log(`1,000 calls in ${elapsed} ms: ${reports} reports, ${streams} stream, ${views} view reads`);

    // Every first attempt reached the fleet's budget as a deposit, in those few reports.
    const view = (await (await fetch(`${coordinator.url}/v1/shop/deps/inventory`)).json()) as DependencyView;
    expect(view.budget.requests).toBe(1000);
  });
});

describe('a breaker tripped by an operator reaches an SDK in another process within one push', () => {
  let coordinator: CoordinatorProcess;
  let server: FlakyServer;

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess(await findFreePort(), { SLUICE_SSE_HEARTBEAT_MS: '1000' });
    server = await startFlakyServer();
  });
  afterAll(async () => {
    await server.close();
    await coordinator.stop();
  });

  /** Requests the coordinator served on a route ending with `suffix`, from its own metrics. */
  async function served(suffix: string): Promise<number> {
    const text = await (await fetch(`${coordinator.url}/metrics`)).text();
    return text
      .split('\n')
      .filter((line) => line.startsWith('sluice_http_request_duration_seconds_count{') && line.includes(`${suffix}"`))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
  }

  it('the next call is refused with a BreakerOpenError, without a request to the coordinator or the dependency', async () => {
    // Polling and view refreshes are pushed far out: only the event stream can bring the trip.
    const sluice = new Sluice({
      baseUrls: [coordinator.url],
      namespace: 'shop',
      logger: false,
      pollIntervalMs: 60_000,
      viewRefreshMs: 60_000,
    });
    const payments = sluice.dependency('payments-api');
    const breaks: Array<BreakerChange & { at: number }> = [];
    payments.onBreak((change) => breaks.push({ ...change, at: Date.now() }));
    server.plan([], ok());
    expect((await payments.fetch(`${server.url}/charges/1`)).status).toBe(200);
    await waitUntil(
      async () => (await metric(coordinator.url, 'sluice_event_stream_clients', {})) === 1,
      5000,
      () => 'the SDK never opened its event stream',
    );
    const decisionsBefore = (await served('/retry')) + (await served('/admit'));

    const trippedAt = Date.now();
    expect(await breakerAction(coordinator.url, 'payments-api', 'trip', 'drill')).toBe(200);
    await waitUntil(
      () => breaks.length > 0,
      5000,
      () => 'no breaker push arrived',
    );
    console.log(`operator trip seen by the SDK in another process after ${breaks[0].at - trippedAt} ms (one SSE push)`);
    expect(breaks[0]).toMatchObject({ dependency: 'payments-api', to: 'forced_open', source: 'fleet' });

    const error = await payments.fetch(`${server.url}/charges/2`).catch((e: unknown) => e);
    // The refusal carries the operator's reason, pushed with the trip.
    expect(error).toMatchObject({
      isBreakerOpenError: true,
      reason: 'breaker_open',
      state: 'forced_open',
      operatorReason: 'drill',
      attempts: 0,
    });
    expect((error as Error).message).toBe('payments-api: the circuit breaker is forced_open (drill)');
    expect(server.requests).toHaveLength(1);
    expect((await served('/retry')) + (await served('/admit'))).toBe(decisionsBefore);

    // A reset is pushed the same way, and calls go out again.
    const resets: BreakerChange[] = [];
    payments.onReset((change) => resets.push(change));
    expect(await breakerAction(coordinator.url, 'payments-api', 'reset', 'drill over')).toBe(200);
    await waitUntil(
      () => resets.length > 0,
      5000,
      () => 'no reset push arrived',
    );
    expect((await payments.fetch(`${server.url}/charges/3`)).status).toBe(200);
    await sluice.close();
  });
});
