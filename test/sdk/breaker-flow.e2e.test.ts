import { Sluice, type BreakerChange } from '@sluice/client';
import type { TestCoordinator } from '../support/test-coordinator';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import { metric, startShopCoordinator } from '../support/sdk';

describe('a breaker opened by reported failures, probed through admit, closed by the probe', () => {
  let coordinator: TestCoordinator;
  let server: FlakyServer;

  beforeAll(async () => {
    coordinator = await startShopCoordinator({
      ledger: { breaker: { minimumCalls: 5, failureRateThreshold: 0.5, openMs: 1000, closeAfterSuccesses: 1 } },
    });
    server = await startFlakyServer();
  });
  afterAll(async () => {
    await server.close();
    await coordinator.close();
  });

  it('opens for everyone on the fleet’s counts, lets one probe out when half-open, and closes on its success', async () => {
    const sluice = new Sluice({ baseUrls: [coordinator.url], namespace: 'shop', logger: false, reportIntervalMs: 20 });
    const ledger = sluice.dependency('ledger');
    const changes: BreakerChange[] = [];
    ledger.onBreak((change) => changes.push(change));
    ledger.onReset((change) => changes.push(change));
    server.plan([], fail(503));
    for (let i = 0; i < 5; i++) await ledger.fetch(`${server.url}/entries`).catch(() => undefined);
    await waitUntil(
      () => changes.length === 1,
      5000,
      () => 'the breaker never opened',
    );
    expect(changes[0]).toMatchObject({ from: 'closed', to: 'open', source: 'fleet' });
    // At least minimumCalls went out (how many retries got in before the report opened it is a race);
    // once open, a call is refused without reaching the dependency.
    const sentWhileClosed = server.requests.length;
    expect(sentWhileClosed).toBeGreaterThanOrEqual(5);
    await expect(ledger.fetch(`${server.url}/entries`)).rejects.toMatchObject({
      isBreakerOpenError: true,
      attempts: 0,
    });
    expect(server.requests).toHaveLength(sentWhileClosed);

    // After openMs the SDK's view is half-open: the next call asks admit, goes out as the probe, and
    // its success (reported at once) closes the breaker for everyone.
    await waitUntil(
      () => ledger.breakerState === 'half_open',
      5000,
      () => 'never half-open',
    );
    server.plan([], ok('recovered'));
    expect(await (await ledger.fetch(`${server.url}/entries`)).text()).toBe('recovered');
    await waitUntil(
      () => changes.length >= 2,
      5000,
      () => 'the probe never closed the breaker',
    );
    expect(changes[changes.length - 1]).toMatchObject({ to: 'closed', source: 'fleet' });
    const admits = await metric(coordinator.url, 'sluice_http_request_duration_seconds_count', {
      route: '/v1/:ns/deps/:dep/admit',
    });
    expect(admits).toBe(1);
    await sluice.close();
  });
});
