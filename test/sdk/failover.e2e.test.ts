import { Sluice, isGiveUpError, type FallbackChange } from '@sluice/client';
import type { DependencyView } from '@sluice/protocol';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { findFreePorts } from '../support/ports';
import { RedisServerProcess } from '../support/redis-server';
import { waitUntil } from '../support/time';
import { policiesFile, retryDecisions } from '../support/sdk';

jest.setTimeout(60_000);

const QUICK = { baseMs: 1, capMs: 5, jitter: 'full' };
/** Every retry the fleet is asked for is granted: these tests are about who answers, not what. */
const GENEROUS = {
  orders: {
    backoff: QUICK,
    retryBudget: { ratio: 1, minRetriesPerSecond: 1000, windowSeconds: 60, maxAttempts: 3 },
    breaker: { minimumCalls: 1_000_000 },
  },
};
/** An attempt that fails as a reset connection does: retriable for an idempotent call. */
const reset = (): never => {
  throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
};
const envOf = (redis: RedisServerProcess, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  SLUICE_REDIS_URL: redis.url,
  SLUICE_POLICIES_FILE: policiesFile(GENEROUS),
  ...extra,
});

/** How each call of a steady stream ended. */
interface Tally {
  decided: number;
  lost: string[];
}

/**
 * `workers` callers in a loop until `stop()`: each call's first attempt fails, so every call asks
 * the fleet for one retry, and ends 'ok' only if a decision granted it.
 */
function steadyCalls(sluice: Sluice, workers: number) {
  const orders = sluice.dependency('orders', { idempotent: true, maxAttempts: 2 });
  const tally: Tally = { decided: 0, lost: [] };
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        await orders.execute(({ attempt }) => (attempt === 1 ? reset() : 'ok'));
        tally.decided++;
      } catch (error) {
        tally.lost.push(isGiveUpError(error) ? `${error.reason} after ${error.attempts}` : String(error));
      }
    }
  };
  const done = Promise.all(Array.from({ length: workers }, loop));
  return {
    tally,
    calls: () => tally.decided + tally.lost.length,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe.each([
  ['directly (its port refuses connections)', false],
  ['behind a proxy (its connections are reset)', true],
])('two coordinators on one Redis, one SIGKILLed under steady calls, reached %s', (_how, proxied) => {
  const WORKERS = 6;
  let redis: RedisServerProcess;
  let first: CoordinatorProcess;
  let second: CoordinatorProcess;
  let proxy: CountingProxy | undefined;

  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    const [firstPort, secondPort] = await findFreePorts(2);
    first = await startCoordinatorProcess(firstPort, envOf(redis));
    second = await startCoordinatorProcess(secondPort, envOf(redis));
    if (proxied) proxy = await startCountingProxy(first.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([first?.kill(), second?.stop()]);
    await redis?.cleanup();
  });

  it('never switches to the fallback, and every call gets exactly one fleet decision', async () => {
    const switches: FallbackChange[] = [];
    const sluice = new Sluice({
      baseUrls: [proxy?.url ?? first.url, second.url],
      namespace: 'shop',
      // A loaded machine must not turn a slow answer into a lost one: only the kill may lose one.
      // (With 1 s, a whole test run's load once lost the six asks of the batch in flight at the kill.)
      decisionTimeoutMs: 5000,
      // Nor a slow report, view read or event stream into a move to the second coordinator before the
      // kill (with the default 1 s, a whole test run's load once did, beside a starting Chromium).
      requestTimeoutMs: 5000,
      reportIntervalMs: 100,
      logger: false,
    });
    sluice.onFallback((change) => switches.push(change));
    const steady = steadyCalls(sluice, WORKERS);
    await waitUntil(
      () => steady.calls() >= 40,
      10_000,
      () => `only ${steady.calls()} calls before the kill`,
    );
    // The first coordinator is the one answering until it dies.
    const beforeKill = steady.calls();
    expect(steady.tally).toEqual({ decided: beforeKill, lost: [] });
    expect(await retryDecisions(first.url, 'orders', 'granted')).toBeGreaterThan(0);
    expect(await retryDecisions(second.url, 'orders', 'granted')).toBe(0);
    await first.kill();
    const seenAtKill = proxy?.seen.length ?? 0;
    const atKill = steady.calls();
    await waitUntil(
      () => steady.calls() >= atKill + 80,
      15_000,
      () => `only ${steady.calls() - atKill} calls after the kill`,
    );
    await steady.stop();
    await sluice.flush();

    expect(steady.tally.lost).toEqual([]);
    expect(switches).toEqual([]);
    expect(sluice.fallbackActive).toBe(false);
    // Exactly one fleet grant per call: a decision cut by the kill and asked again of the second
    // coordinator (same requestId) was answered with its first outcome, not decided twice.
    const view = (await (await fetch(`${second.url}/v1/shop/deps/orders`)).json()) as DependencyView;
    expect(view.budget.retries).toBe(steady.tally.decided);
    expect(await retryDecisions(second.url, 'orders', 'granted')).toBeGreaterThan(0);
    if (proxy) {
      // After the kill the dead one is asked at most once by each caller (and the reporter, the
      // event stream and its poll): the next request goes to the live one, not through the dead one first.
      const askedAfterKill = proxy.seen.slice(seenAtKill).filter((line) => line.startsWith('POST'));
      expect(askedAfterKill.length).toBeLessThanOrEqual(WORKERS + 1);
    }
    await sluice.close();
  });
});

describe('a coordinator whose Redis is stopped answers store_unavailable: the fallback after the configured failures', () => {
  const FAILURES = 4;
  let redis: RedisServerProcess;
  let coordinator: CoordinatorProcess;

  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    const [port] = await findFreePorts(1);
    coordinator = await startCoordinatorProcess(port, envOf(redis, { SLUICE_STORE_TIMEOUT_MS: '200' }));
  });
  afterAll(async () => {
    redis?.resume();
    await coordinator?.stop();
    await redis?.cleanup();
  });

  it(`refuses retries for ${FAILURES - 1} failed decisions, then the local fallback decides`, async () => {
    const switches: FallbackChange[] = [];
    const sluice = new Sluice({
      baseUrls: coordinator.url,
      namespace: 'shop',
      failuresBeforeFallback: FAILURES,
      // Every decision waits for the coordinator's 503, so each failure is counted before the next call.
      decisionTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      // Nothing but the calls' decisions talks to the coordinator while Redis is stopped.
      sse: false,
      pollIntervalMs: 600_000,
      viewRefreshMs: 600_000,
      reportIntervalMs: 60_000,
      logger: false,
    });
    sluice.onFallback((change) => switches.push(change));
    const orders = sluice.dependency('orders', { idempotent: true, maxAttempts: 2 });
    const call = () =>
      orders
        .execute(({ attempt }) => (attempt === 1 ? reset() : 'ok'))
        .then(
          () => 'granted',
          (error: unknown) => (isGiveUpError(error) ? `${error.reason} after ${error.attempts}` : String(error)),
        );
    // The fleet answers while Redis does.
    expect(await call()).toBe('granted');
    const view = (await (await fetch(`${coordinator.url}/v1/shop/deps/orders`)).json()) as DependencyView;
    expect(view.budget.retries).toBe(1);

    redis.pause();
    const outcomes: string[] = [];
    for (let i = 0; i < FAILURES; i++) outcomes.push(await call());
    // The first failures are hiccups: no retry without the fleet's grant. The last starts the
    // fallback, which decides that very retry.
    expect(outcomes).toEqual([...Array(FAILURES - 1).fill('coordinator_unavailable after 1'), 'granted']);
    expect(switches).toEqual([expect.objectContaining({ active: true, during: 'retry' })]);
    expect(switches[0].error).toMatchObject({ status: 503, code: 'store_unavailable' });
    expect(sluice.fallbackActive).toBe(true);
    // From now on the fallback decides at once, without waiting for the coordinator.
    expect(await call()).toBe('granted');
    expect(switches).toHaveLength(1);

    redis.resume();
    await sluice.close();
  });
});
