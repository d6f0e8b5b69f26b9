import { Sluice } from '@sluice/client';
import type { DependencyBudgetView } from '@sluice/protocol';
import type { TestCoordinator } from '../support/test-coordinator';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import { QUICK_BACKOFF, startShopCoordinator } from '../support/sdk';

/** The fleet's budget of `shop/<dep>`, as the coordinator counts it. */
async function budgetOf(coordinator: TestCoordinator, dependency: string): Promise<DependencyBudgetView> {
  const view = (await (await fetch(`${coordinator.url}/v1/shop/deps/${dependency}`)).json()) as {
    budget: DependencyBudgetView;
  };
  return view.budget;
}

/** Rejects with what `promise` rejected with, or fails the test if it resolved. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('SDK: the granted retries that succeeded are reported exactly (retriesSucceeded)', () => {
  let coordinator: TestCoordinator;
  let server: FlakyServer;
  let sluice: Sluice;

  beforeAll(async () => {
    coordinator = await startShopCoordinator({
      once: QUICK_BACKOFF,
      twice: QUICK_BACKOFF,
      shadow: { ...QUICK_BACKOFF, mode: 'shadow', retryBudget: { ratio: 0, minRetriesPerSecond: 0 } },
      cancelled: QUICK_BACKOFF,
      waiting: { backoff: { baseMs: 60_000, capMs: 60_000, jitter: 'none' } },
    });
    // Reports go out when flushed, not on a timer, so each test sees what its calls reported.
    sluice = new Sluice({ baseUrls: [coordinator.url], namespace: 'shop', logger: false, reportIntervalMs: 60_000 });
  });
  beforeEach(async () => (server = await startFlakyServer()));
  afterEach(() => server.close());
  afterAll(async () => {
    await sluice.close();
    await coordinator.close();
  });

  it('counts a granted retry that answered once, in the report after it, and never again', async () => {
    const dep = sluice.dependency('once', { idempotent: true });
    server.plan([fail(503), ok('second time'), fail(503), ok('again')]);
    expect(await (await dep.fetch(`${server.url}/a`)).text()).toBe('second time');
    await sluice.flush();
    expect(await budgetOf(coordinator, 'once')).toMatchObject({ retries: 1, retriesSucceeded: 1, requests: 1 });
    // A report with nothing new adds nothing; the next success adds one.
    await sluice.flush();
    expect(await budgetOf(coordinator, 'once')).toMatchObject({ retries: 1, retriesSucceeded: 1 });
    expect(await (await dep.fetch(`${server.url}/b`)).text()).toBe('again');
    await sluice.flush();
    expect(await budgetOf(coordinator, 'once')).toMatchObject({ retries: 2, retriesSucceeded: 2, requests: 2 });
  });

  it('counts nothing for a retry that failed: of two retries, only the one that answered', async () => {
    const dep = sluice.dependency('twice', { idempotent: true, maxAttempts: 3 });
    server.plan([fail(503), fail(503), ok('third time')]);
    expect(await (await dep.fetch(`${server.url}/a`)).text()).toBe('third time');
    await sluice.flush();
    expect(await budgetOf(coordinator, 'twice')).toMatchObject({ retries: 2, retriesSucceeded: 1 });
    // A call whose every retry failed gives nothing back.
    server.plan([fail(503), fail(503), fail(503)]);
    await rejection(dep.fetch(`${server.url}/b`));
    await sluice.flush();
    expect(await budgetOf(coordinator, 'twice')).toMatchObject({ retries: 4, retriesSucceeded: 1 });
  });

  it('counts nothing for a retry the budget did not count (a shadow policy let it through)', async () => {
    const dep = sluice.dependency('shadow', { idempotent: true });
    server.plan([fail(503), ok('through')]);
    expect(await (await dep.fetch(`${server.url}/a`)).text()).toBe('through');
    await sluice.flush();
    expect(await budgetOf(coordinator, 'shadow')).toMatchObject({ retries: 0, retriesSucceeded: 0 });
  });

  it('counts nothing for a retry the caller cancelled while it was out', async () => {
    const dep = sluice.dependency('cancelled', { idempotent: true });
    server.plan([fail(503), { hang: true }]);
    const caller = new AbortController();
    const call = rejection(dep.fetch(`${server.url}/a`, { signal: caller.signal }));
    await waitUntil(
      () => server.requests.length === 2,
      5000,
      () => 'the retry never went out',
    );
    caller.abort(new Error('the caller went away'));
    await call;
    await sluice.flush();
    expect(await budgetOf(coordinator, 'cancelled')).toMatchObject({ retries: 1, retriesSucceeded: 0 });
  });

  it('counts nothing for a granted retry that was never sent (the caller gave up during its backoff)', async () => {
    const dep = sluice.dependency('waiting', { idempotent: true, deadlineMs: 120_000 });
    server.plan([fail(503), ok('never asked')]);
    const caller = new AbortController();
    const retried = new Promise<void>((resolve) => dep.onRetry(() => resolve()));
    const call = rejection(dep.fetch(`${server.url}/a`, { signal: caller.signal }));
    await retried;
    caller.abort(new Error('the caller went away'));
    await call;
    await sluice.flush();
    expect(server.requests).toHaveLength(1);
    expect(await budgetOf(coordinator, 'waiting')).toMatchObject({ retries: 1, retriesSucceeded: 0 });
  });
});
