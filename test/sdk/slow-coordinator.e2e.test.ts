import { Sluice, type Dependency, type FallbackChange } from '@sluice/client';
import type { TestCoordinator } from '../support/test-coordinator';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import { failure, retryDecisions, startShopCoordinator } from '../support/sdk';

describe('a slow coordinator is not a lost one', () => {
  let coordinator: TestCoordinator;
  let proxy: CountingProxy;
  let server: FlakyServer;
  /** How long the proxy holds each coordinator request, by "METHOD /path". */
  let delay: (line: string) => number = () => 0;

  beforeAll(async () => {
    // Breakers that do not open here: this is about the retry decisions.
    coordinator = await startShopCoordinator({
      stock: { breaker: { minimumCalls: 1000 } },
      // One that opens on 4 calls at 50 % failures, half-opens 300 ms later, and closes on one probe's success.
      pay: { breaker: { minimumCalls: 4, failureRateThreshold: 0.5, openMs: 300, closeAfterSuccesses: 1 } },
    });
    proxy = await startCountingProxy(coordinator.url, { delayMs: (line) => delay(line) });
    server = await startFlakyServer();
  });
  /** A client through the proxy: decisions wait 50 ms, requests 400 ms; reports every 50 ms. */
  const client = () =>
    new Sluice({
      baseUrls: [proxy.url],
      namespace: 'shop',
      logger: false,
      decisionTimeoutMs: 50,
      requestTimeoutMs: 400,
      reportIntervalMs: 50,
    });

  afterAll(async () => {
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  /** The admissions the proxy has seen. */
  const admits = () => proxy.count((line) => line.endsWith('/admit'));

  /** Four failed calls through `pay` open the fleet's breaker; resolves once it is half-open. */
  async function halfOpenAfterFailures(pay: Dependency, path: string): Promise<void> {
    server.plan([], fail(503));
    for (let i = 0; i < 4; i++) await failure(pay.fetch(`${server.url}${path}/${i}`));
    await waitUntil(
      () => pay.breakerState === 'half_open',
      5000,
      () => `the fleet breaker never half-opened (${pay.breakerState})`,
    );
  }

  /**
   * Resolves once `pay` keeps a probe from a late answer. (The proxy passing the answer on is not
   * enough: the client reads it a moment later, and a call made before would ask again.)
   */
  const probeKept = (pay: Dependency) =>
    waitUntil(
      () => pay['fleet'].keptProbes['probes'].length === 1,
      5000,
      () => `no probe was kept from the late admit answer: ${proxy.answered.join(', ')}`,
    );

  /** Resolves once the probe's success has closed `pay`'s breaker. */
  const closedByTheProbe = (pay: Dependency) =>
    waitUntil(
      () => pay.breakerState === 'closed',
      5000,
      () => `the probe's success did not close the breaker (${pay.breakerState})`,
    );

  it('answers later than the decision timeout: no retry, no fallback; no answer at all: the fallback', async () => {
    const sluice = client();
    const switches: FallbackChange[] = [];
    sluice.onFallback((change) => switches.push(change));
    const stock = sluice.dependency('stock', {
      idempotent: true,
      fallbackPolicy: { backoff: { baseMs: 1, capMs: 5, jitter: 'full' }, breaker: { minimumCalls: 1000 } },
    });
    server.plan([], fail(503));

    // Decisions answered after 150 ms: each call's retry is refused, and the SDK stays with the fleet.
    delay = (line) => (line.endsWith('/retry') ? 150 : 0);
    for (let i = 0; i < 6; i++) {
      const error = await failure(stock.fetch(`${server.url}/slow/${i}`));
      expect([error.reason, error.attempts]).toEqual(['coordinator_unavailable', 1]);
    }
    // Every call asked, unless the wait for the ask under way left it too little time (on a loaded
    // machine); every ask sent is answered late.
    const retryAsks = () => proxy.count((line) => line.endsWith('/retry'));
    expect(retryAsks()).toBeGreaterThan(0);
    await waitUntil(
      () => proxy.answered.filter((line) => line.endsWith('/retry 200')).length === retryAsks(),
      5000,
      () => `the late answers never came: ${proxy.answered.join(', ')}`,
    );
    expect(sluice.fallbackActive).toBe(false);
    expect(switches).toEqual([]);
    // The coordinator granted and counted each ask it got: a late grant is lost, never spent twice.
    expect(await retryDecisions(coordinator.url, 'stock', 'granted')).toBe(retryAsks());

    // Now nothing answers within the request timeout: after three failures in a row, the fallback.
    delay = () => 2000;
    await waitUntil(
      async () => {
        await failure(stock.fetch(`${server.url}/hung`));
        return sluice.fallbackActive;
      },
      10_000,
      () => 'the SDK never switched to its fallback',
    );
    expect(switches).toEqual([expect.objectContaining({ active: true })]);
    const local = await failure(stock.fetch(`${server.url}/fallback`));
    expect([local.reason, local.attempts]).toEqual(['max_attempts', 3]);

    delay = () => 0;
    await waitUntil(
      () => !sluice.fallbackActive,
      5000,
      () => 'the SDK never returned to the coordinator',
    );
    await sluice.close();
  });

  it('a half-open fleet breaker whose admit answers late lets no probe out, and keeps the probe for the next call', async () => {
    delay = () => 0;
    const sluice = client();
    const pay = sluice.dependency('pay', {
      maxAttempts: 1,
      // The process's own breaker opens on the same failures, and half-opens after 100 ms.
      fallbackPolicy: { breaker: { minimumCalls: 4, failureRateThreshold: 0.5, openMs: 100 } },
    });
    await halfOpenAfterFailures(pay, '/pay');

    // The fleet's probe decision comes too late: the call is refused, and nothing reaches the server.
    delay = (line) => (line.endsWith('/admit') ? 150 : 0);
    server.plan([], ok());
    const sent = server.requests.length;
    await expect(pay.fetch(`${server.url}/pay/probe`)).rejects.toMatchObject({ isBreakerOpenError: true, attempts: 0 });
    expect(server.requests).toHaveLength(sent);
    expect(sluice.fallbackActive).toBe(false);

    // The late answer carried the fleet's probe: the next call goes out as it, without asking, and
    // its success closes the breaker for everyone.
    await probeKept(pay);
    const asked = admits();
    delay = () => 0;
    await expect(pay.fetch(`${server.url}/pay/kept`)).resolves.toMatchObject({ status: 200 });
    expect(admits()).toBe(asked);
    expect(server.requests).toHaveLength(sent + 1);
    await closedByTheProbe(pay);
    await sluice.close();
  });

  it('a call whose deadline ends while its admit is under way sends nothing, and its probe goes to the next call', async () => {
    delay = () => 0;
    const sluice = new Sluice({
      baseUrls: [proxy.url],
      namespace: 'shop',
      logger: false,
      decisionTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      reportIntervalMs: 50,
    });
    const pay = sluice.dependency('pay', { maxAttempts: 1 });
    await halfOpenAfterFailures(pay, '/pay/again');

    // The admit would be answered in time for the decision (300 ms of 1,000), not for the call
    // (100 ms): the call gives up at its deadline, before the answer, which is then a late one.
    delay = (line) => (line.endsWith('/admit') ? 300 : 0);
    server.plan([], ok());
    const sent = server.requests.length;
    const admitsAnswered = () => proxy.answered.filter((line) => line.endsWith('/admit 200')).length;
    const answeredBefore = admitsAnswered();
    const late = await failure(pay.fetch(`${server.url}/pay/late`, { deadlineMs: 100 }));
    expect([late.reason, late.attempts]).toEqual(['deadline_exceeded', 0]);
    expect(admitsAnswered()).toBe(answeredBefore);
    expect(server.requests).toHaveLength(sent);
    await probeKept(pay);
    const asked = admits();

    delay = () => 0;
    await expect(pay.fetch(`${server.url}/pay/next`)).resolves.toMatchObject({ status: 200 });
    expect(admits()).toBe(asked);
    await closedByTheProbe(pay);
    await sluice.close();
  });
});
