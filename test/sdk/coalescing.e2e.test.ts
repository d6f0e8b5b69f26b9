import { Sluice, isGiveUpError, type GiveUpEvent } from '@sluice/client';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QUICK_BACKOFF, retryDecisions, startShopCoordinator } from '../support/sdk';
import type { TestCoordinator } from '../support/test-coordinator';
import type { RetryDecision } from '@sluice/protocol';

/** limit = floor(0 × requests + 10 × 1) = 10 retries a second for the whole fleet; one retry a call. */
const TEN_A_SECOND = {
  ...QUICK_BACKOFF,
  retryBudget: { ratio: 0, minRetriesPerSecond: 10, windowSeconds: 1, maxAttempts: 2 },
};
/** The same limit, 10, over 10 s: no grant leaves the window while a test runs, however slow the machine. */
const TEN_IN_TEN_SECONDS = {
  ...QUICK_BACKOFF,
  retryBudget: { ratio: 0, minRetriesPerSecond: 1, windowSeconds: 10, maxAttempts: 2 },
};
const CALLS = 50;

/** A dependency that fails every call with 503: the first attempts of a storm all at one instant, once `CALLS` of them wait. */
async function startFailingDependency() {
  const held: ServerResponse[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '/');
    const fail = (r: ServerResponse) => r.writeHead(503, { 'content-type': 'text/plain' }).end('down');
    if (req.headers['sluice-attempt'] !== '1') return fail(res);
    held.push(res);
    if (held.length >= CALLS) held.splice(0).forEach(fail);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const isRetryAsk = (line: string) =>
  line === 'POST /v1/shop/retries' || /^POST \/v1\/shop\/deps\/[^/]+\/retry$/.test(line);

describe('SDK retry asks coalesced into one request, and denials held until they lapse', () => {
  let coordinator: TestCoordinator;
  let proxy: CountingProxy;
  let server: Awaited<ReturnType<typeof startFailingDependency>>;
  const clients: Sluice[] = [];
  /** Every grant the coordinator answered, with the budget it left. */
  const grantsSeen: RetryDecision[] = [];

  /** A client through the counting proxy; reports rarely, so only `retryAfterMs` ends a held denial here. */
  const client = (coalesceRetryAsks?: boolean) => {
    const sluice = new Sluice({
      baseUrls: [proxy.url],
      namespace: 'shop',
      logger: false,
      reportIntervalMs: 60_000,
      decisionTimeoutMs: 1000,
      ...(coalesceRetryAsks === undefined ? {} : { coalesceRetryAsks }),
    });
    clients.push(sluice);
    return sluice;
  };

  /** `CALLS` calls at once; what each ended with, and the retry asks the coordinator got meanwhile. */
  const storm = async (sluice: Sluice, dependency: string) => {
    const dep = sluice.dependency(dependency, {
      idempotent: true,
      maxAttempts: 2,
      hedge: false,
      timeoutMs: 2000,
      deadlineMs: 5000,
    });
    const giveUps: GiveUpEvent[] = [];
    dep.onGiveUp((event) => giveUps.push(event));
    const asksBefore = proxy.count(isRetryAsk);
    const ends = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        dep.fetch(`${server.url}/${dependency}/${i}`).then(String, (e: unknown) => e),
      ),
    );
    return { ends, giveUps, asks: proxy.count(isRetryAsk) - asksBefore };
  };
  const reasons = (ends: unknown[]) => ends.map((end) => (isGiveUpError(end) ? end.reason : String(end)));

  beforeAll(async () => {
    coordinator = await startShopCoordinator({
      storm: TEN_IN_TEN_SECONDS,
      held: TEN_IN_TEN_SECONDS,
      lapse: TEN_A_SECOND,
      'per-call': TEN_IN_TEN_SECONDS,
    });
    proxy = await startCountingProxy(coordinator.url, {
      inspect: {
        match: /\/retr(y|ies)$/,
        onBody: (_line, body) => {
          const answer = JSON.parse(body.toString()) as { decisions?: RetryDecision[] } & RetryDecision;
          grantsSeen.push(...(answer.decisions ?? [answer]).filter((decision) => decision.allow));
        },
      },
    });
    server = await startFailingDependency();
  });
  afterAll(async () => {
    await Promise.all(clients.map((sluice) => sluice.close()));
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  it('sends one batch (and at most one lone ask before it) for 50 simultaneous failures, and grants exactly the budget limit, each grant used', async () => {
    const sluice = client();
    const { ends, asks } = await storm(sluice, 'storm');

    // The first failure that lands alone may go out on its own; every later one waits for its answer and goes in one batch.
    expect(asks).toBeLessThanOrEqual(2);
    expect(proxy.count((line) => line === 'POST /v1/shop/retries')).toBe(1);
    const byReason = reasons(ends).reduce<Record<string, number>>((n, r) => ({ ...n, [r]: (n[r] ?? 0) + 1 }), {});
    // 10 calls got the second-wave's one retry and failed again; 40 were denied.
    expect(byReason).toEqual({ max_attempts: 10, budget_exhausted: 40 });
    expect(await retryDecisions(coordinator.url, 'storm', 'granted')).toBe(10);
    expect(server.paths.filter((path) => path.startsWith('/storm/')).length).toBe(CALLS + 10);
  });

  it('asks nothing while a held denial stands: the calls are denied locally, with the reason, in the events', async () => {
    const sluice = client();
    await storm(sluice, 'held');
    const again = await storm(sluice, 'held');

    expect(again.asks).toBe(0);
    expect(reasons(again.ends)).toEqual(new Array(CALLS).fill('budget_exhausted'));
    expect(again.giveUps.map((event) => event.reason)).toEqual(new Array(CALLS).fill('budget_exhausted'));
    expect(await retryDecisions(coordinator.url, 'held', 'granted')).toBe(10);
  });

  it('asks again once retryAfterMs has passed, and the budget grants again', async () => {
    const sluice = client();
    await storm(sluice, 'lapse');
    const first = await retryDecisions(coordinator.url, 'lapse', 'granted');
    // The window is 1 s: the denial said to ask again within it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const later = await storm(sluice, 'lapse');
    const second = (await retryDecisions(coordinator.url, 'lapse', 'granted')) - first;

    expect(later.asks).toBeGreaterThanOrEqual(1);
    expect(later.asks).toBeLessThanOrEqual(2);
    // Each storm gets a fresh second's limit of 10 (more when its asks fall on both sides of a
    // second's edge: its two requests, or a stalled machine's long storm, may each meet a fresh
    // second), and no grant ever takes the window past its limit (every retry failed: none is given back).
    expect(first).toBeGreaterThanOrEqual(10);
    expect(second).toBeGreaterThanOrEqual(10);
    const lapse = grantsSeen.filter((decision) => decision.budget.windowSeconds === 1);
    expect(lapse).toHaveLength(first + second);
    for (const { budget } of lapse) {
      expect(budget.retriesSucceeded).toBe(0);
      expect(budget.retries).toBeLessThanOrEqual(budget.limit);
      expect(budget.limit).toBe(10);
    }
  });

  it('with coalesceRetryAsks: false asks once per failed call, and the same budget grants the same', async () => {
    const sluice = client(false);
    const { asks } = await storm(sluice, 'per-call');

    expect(asks).toBeGreaterThan(10);
    expect(await retryDecisions(coordinator.url, 'per-call', 'granted')).toBe(10);
  });
});
