import { Sluice, type BreakerChange, type FallbackChange, type GiveUpError } from '@sluice/client';
import type { DependencyView } from '@sluice/protocol';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';
import { breakerAction, failure, policiesFile, retryDecisions } from '../support/sdk';

describe('the coordinator is killed mid-run: local fallback, then back to the fleet', () => {
  let port: number;
  let coordinator: CoordinatorProcess;
  let server: FlakyServer;
  const env = () => ({
    SLUICE_POLICIES_FILE: policiesFile({
      orders: {
        backoff: { baseMs: 1, capMs: 5, jitter: 'full' },
        // The fleet breaker opens on the outage's late-reported failures however they are batched.
        breaker: { minimumCalls: 5, failureRateThreshold: 0.3 },
      },
    }),
  });

  beforeAll(async () => {
    port = await findFreePort();
    coordinator = await startCoordinatorProcess(port, env());
    server = await startFlakyServer();
  });
  afterAll(async () => {
    await server.close();
    await coordinator.stop();
  });

  it('keeps calling under the local budget and breaker, says so, and returns when the coordinator answers again', async () => {
    const lines: string[] = [];
    const sluice = new Sluice({
      baseUrls: [coordinator.url],
      namespace: 'shop',
      reportIntervalMs: 50,
      pollIntervalMs: 100,
      logger: { warn: (line) => lines.push(`warn ${line}`), info: (line) => lines.push(`info ${line}`) },
    });
    const orders = sluice.dependency('orders', {
      idempotent: true,
      fallbackPolicy: {
        // Locally: 3 retries per 10 s window, and a breaker that opens after 6 calls at 50 % failures.
        retryBudget: { ratio: 0, minRetriesPerSecond: 0.3, windowSeconds: 10, maxAttempts: 3 },
        backoff: { baseMs: 1, capMs: 5, jitter: 'full' },
        breaker: { minimumCalls: 6, failureRateThreshold: 0.5, openMs: 60_000, windowSeconds: 10 },
      },
    });
    const switches: FallbackChange[] = [];
    sluice.onFallback((change) => switches.push(change));
    server.plan([], ok());
    for (let i = 0; i < 5; i++) expect((await orders.fetch(`${server.url}/ok/${i}`)).status).toBe(200);
    expect(sluice.fallbackActive).toBe(false);

    await coordinator.kill();
    // Calls keep going while the SDK notices (its next report fails) and after.
    for (let i = 0; i < 5; i++) expect((await orders.fetch(`${server.url}/during/${i}`)).status).toBe(200);
    await waitUntil(
      () => sluice.fallbackActive,
      5000,
      () => 'the SDK never switched to its fallback',
    );
    expect(switches).toEqual([expect.objectContaining({ active: true })]);
    expect(lines.some((line) => line.startsWith('warn coordinator unavailable'))).toBe(true);

    // Failures now: the local budget grants 3 retries in all, then refuses.
    server.plan([], fail(503));
    const first = await failure(orders.fetch(`${server.url}/fail/1`));
    expect([first.reason, first.attempts]).toEqual(['max_attempts', 3]);
    const second = await failure(orders.fetch(`${server.url}/fail/2`));
    expect([second.reason, second.attempts]).toEqual(['budget_exhausted', 2]);
    // Keep failing until half the window's calls have failed: the local breaker opens, and calls are
    // refused without reaching the server.
    let refused: GiveUpError | undefined;
    for (let i = 0; i < 30 && !refused; i++) {
      const error = await failure(orders.fetch(`${server.url}/fail/more-${i}`));
      if (error.reason === 'breaker_open') refused = error;
    }
    // The failure that opened it was refused its retry; the next call is refused before it is sent.
    expect(refused).toMatchObject({ isBreakerOpenError: true, state: 'open' });
    const sent = server.requests.length;
    await expect(orders.fetch(`${server.url}/refused`)).rejects.toMatchObject({
      isBreakerOpenError: true,
      attempts: 0,
    });
    expect(server.requests).toHaveLength(sent);

    // The coordinator comes back on the same address: the SDK returns to it on its own.
    coordinator = await startCoordinatorProcess(port, env());
    await waitUntil(
      () => !sluice.fallbackActive,
      5000,
      () => 'the SDK never returned to the coordinator',
    );
    expect(switches.map((change) => change.active)).toEqual([true, false]);
    expect(lines.some((line) => line.startsWith('info coordinator answers again'))).toBe(true);
    // The outcomes seen during the outage are reported late (they are still in the fleet's window),
    // and the fleet's breaker, which governs again, opens on them.
    await sluice.flush();
    const view = (await (await fetch(`${coordinator.url}/v1/shop/deps/orders`)).json()) as DependencyView;
    expect(view.breaker.state).toBe('open');
    // So are the 3 retries the local budget granted: the fleet's budget is charged for them.
    expect(view.budget.retries).toBe(3);
    await waitUntil(
      () => orders.breakerState === 'open',
      5000,
      () => 'the fleet view never came back',
    );
    // An operator reset is pushed over the reopened event stream; retries are the fleet's again.
    const resets: BreakerChange[] = [];
    orders.onReset((change) => resets.push(change));
    expect(await breakerAction(coordinator.url, 'orders', 'reset', 'after the outage')).toBe(200);
    await waitUntil(
      () => orders.breakerState === 'closed',
      5000,
      () => 'the reset never arrived',
    );
    expect(resets[0]).toMatchObject({ from: 'open', to: 'closed', source: 'fleet' });
    server.plan([fail(503)], ok());
    expect((await orders.fetch(`${server.url}/after`)).status).toBe(200);
    expect(await retryDecisions(coordinator.url, 'orders', 'granted')).toBe(1);
    expect(sluice.fallbackActive).toBe(false);
    await sluice.close();
  });

  it('the fallback keeps each process to its share of the fleet, and the fleet breaker it last saw', async () => {
    const client = (reporter: string) =>
      new Sluice({ baseUrls: [coordinator.url], namespace: 'shop', reporter, reportIntervalMs: 50, logger: false });
    const fleet = [client('pod-1'), client('pod-2')];
    const stock = fleet.map((sluice) =>
      sluice.dependency('stock', {
        idempotent: true,
        fallbackPolicy: {
          // The fleet's floor: 4 retries per 10 s window; each of the two reporters keeps half of it.
          retryBudget: { ratio: 0, minRetriesPerSecond: 0.4, windowSeconds: 10, maxAttempts: 3 },
          backoff: { baseMs: 1, capMs: 5, jitter: 'full' },
          breaker: { minimumCalls: 1000 },
        },
      }),
    );
    const audit = fleet.map((sluice) => sluice.dependency('audit-log'));
    server.plan([], ok());
    // Two rounds of reports: the second answer counts both reporters.
    for (let round = 0; round < 2; round++) {
      for (const [i, dependency] of stock.entries()) {
        expect((await dependency.fetch(`${server.url}/stock/${round}/${i}`)).status).toBe(200);
        await fleet[i].flush();
      }
    }
    // An operator holds audit-log open; both processes hear of it.
    expect((await audit[0].fetch(`${server.url}/audit`)).status).toBe(200);
    expect(await breakerAction(coordinator.url, 'audit-log', 'trip', 'audit store migration')).toBe(200);
    await waitUntil(
      () => audit.every((dependency) => dependency.breakerState === 'forced_open'),
      5000,
      () => 'the trip never arrived',
    );

    await coordinator.kill();
    for (const [i, dependency] of stock.entries()) {
      await waitUntil(
        async () => {
          expect((await dependency.fetch(`${server.url}/during/${i}`)).status).toBe(200);
          return fleet[i].fallbackActive;
        },
        5000,
        () => `pod-${i + 1} never switched to its fallback`,
      );
    }

    // Each process gets 2 of the fleet's 4 retries: the first call's two, then none.
    server.plan([], fail(503));
    for (const dependency of stock) {
      const first = await failure(dependency.fetch(`${server.url}/fail/first`));
      expect([first.reason, first.attempts]).toEqual(['max_attempts', 3]);
      const second = await failure(dependency.fetch(`${server.url}/fail/second`));
      expect([second.reason, second.attempts]).toEqual(['budget_exhausted', 1]);
    }
    // The trip holds through the outage: calls are refused before they are sent.
    const sent = server.requests.length;
    for (const dependency of audit) {
      await expect(dependency.fetch(`${server.url}/audit`)).rejects.toMatchObject({
        isBreakerOpenError: true,
        attempts: 0,
      });
      expect(dependency.breakerState).toBe('forced_open');
    }
    expect(server.requests).toHaveLength(sent);

    await Promise.all(fleet.map((sluice) => sluice.close()));
    coordinator = await startCoordinatorProcess(port, env());
  });
});
