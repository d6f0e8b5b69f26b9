import {
  Sluice,
  isDeadlineExceededError,
  isGiveUpError,
  isHttpStatusError,
  type GiveUpError,
  type RetryEvent,
} from '@sluice/client';
import type { TestCoordinator } from '../support/test-coordinator';
import { fail, ok, startFlakyServer, type FlakyServer } from '../support/flaky-server';
import { waitUntil } from '../support/time';
import { QUICK_BACKOFF, retryDecisions, startShopCoordinator } from '../support/sdk';

/** Rejects with what `promise` rejected with, or fails the test if it resolved. */
async function rejection(promise: Promise<unknown>): Promise<GiveUpError> {
  try {
    await promise;
  } catch (error) {
    return error as GiveUpError;
  }
  throw new Error('expected a rejection');
}

describe('SDK retries against the real coordinator and a flaky server', () => {
  let coordinator: TestCoordinator;
  let server: FlakyServer;
  let sluice: Sluice;

  beforeAll(async () => {
    coordinator = await startShopCoordinator({
      flaky: { ...QUICK_BACKOFF, retryBudget: { maxAttempts: 4 } },
      'retry-after': { backoff: { baseMs: 1, capMs: 5, jitter: 'none' } },
      // floor(0 × requests + 0.1 × 10) = 1 retry in the window, for the whole fleet.
      'one-retry': { ...QUICK_BACKOFF, retryBudget: { ratio: 0, minRetriesPerSecond: 0.1, windowSeconds: 10 } },
      deadline: { ...QUICK_BACKOFF, retryBudget: { maxAttempts: 10 } },
      posts: QUICK_BACKOFF,
      hedged: QUICK_BACKOFF,
    });
    sluice = new Sluice({ baseUrls: [coordinator.url], namespace: 'shop', logger: false });
  });
  beforeEach(async () => (server = await startFlakyServer()));
  afterEach(() => server.close());
  afterAll(async () => {
    await sluice.close();
    await coordinator.close();
  });

  it('retries a 503, a timeout and a dropped connection, each with a grant, and returns the answer', async () => {
    const flaky = sluice.dependency('flaky', { maxAttempts: 4, timeoutMs: 150 });
    const retries: RetryEvent[] = [];
    flaky.onRetry((event) => retries.push(event));
    server.plan([fail(503), { hang: true }, { drop: true }, ok('finally')]);

    const response = await flaky.fetch(`${server.url}/items/1`);

    expect(response.status).toBe(200);
    expect(await response.text()).toBe('finally');
    expect(server.requests.map((r) => r.headers['sluice-attempt'])).toEqual(['1', '2', '3', '4']);
    expect(retries.map((r) => r.attempt)).toEqual([2, 3, 4]);
    expect(await retryDecisions(coordinator.url, 'flaky', 'granted')).toBe(3);
    expect(server.requests[1].aborted).toBe(true); // the attempt that hung was aborted at its timeout
  });

  it('retries only when the fleet grants it: past the budget the call gives up with budget_exhausted', async () => {
    const dep = sluice.dependency('one-retry', { idempotent: true });
    server.plan([], fail(503));

    const first = await rejection(dep.fetch(`${server.url}/a`));
    const second = await rejection(dep.fetch(`${server.url}/b`));

    // The first call got the window's one retry, then no second; the second call got none.
    expect([first.reason, first.attempts]).toEqual(['budget_exhausted', 2]);
    expect([second.reason, second.attempts]).toEqual(['budget_exhausted', 1]);
    expect(isHttpStatusError(second.lastError) && second.lastError.status).toBe(503);
    expect(server.requests.map((r) => r.path)).toEqual(['/a', '/a', '/b']);
    // The first denial said when to ask again: the second call's is the same denial, held locally without asking.
    expect(await retryDecisions(coordinator.url, 'one-retry', 'budget_exhausted')).toBe(1);
  });

  it('never undercuts Retry-After: the retry after a 429 with Retry-After: 1 waits at least a second', async () => {
    const dep = sluice.dependency('retry-after');
    server.plan([fail(429, { 'retry-after': '1' }), ok()]);

    const response = await dep.fetch(`${server.url}/limited`);

    expect(response.status).toBe(200);
    const [first, second] = server.requests;
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(1000);
  });

  it('never retries a non-idempotent POST without an idempotency key, and retries one with a key', async () => {
    const posts = sluice.dependency('posts');
    server.plan([fail(503)], ok('created'));

    const error = await rejection(posts.fetch(`${server.url}/charges`, { method: 'POST', body: '{}' }));

    expect(isGiveUpError(error) && error.reason).toBe('not_idempotent');
    expect(server.requests).toHaveLength(1);
    expect(await retryDecisions(coordinator.url, 'posts', 'granted')).toBe(0);

    server.plan([fail(503)], ok('created'));
    const response = await posts.fetch(`${server.url}/charges`, {
      method: 'POST',
      body: '{"amount":5}',
      idempotencyKey: 'charge-42',
    });
    expect(await response.text()).toBe('created');
    const keyed = server.requests.slice(1);
    expect(keyed.map((r) => r.headers['idempotency-key'])).toEqual(['charge-42', 'charge-42']);
  });

  it('a non-retriable status (404) is the answer: returned, not retried', async () => {
    const dep = sluice.dependency('flaky');
    server.plan([{ status: 404, body: 'missing' }]);
    const response = await dep.fetch(`${server.url}/nothing`);
    expect(response.status).toBe(404);
    expect(server.requests).toHaveLength(1);
  });

  it('the deadline bounds the whole loop: attempts carry what is left and the last is aborted at the deadline', async () => {
    // 300 ms are left after the first attempt's timeout for the retry's decision, its backoff and a
    // second attempt (with 150, a whole test run's load once left too little for a second attempt).
    const DEADLINE_MS = 700;
    const TIMEOUT_MS = 400;
    const dep = sluice.dependency('deadline', { maxAttempts: 10, timeoutMs: TIMEOUT_MS });
    server.plan([], { hang: true });
    const started = Date.now();

    const error = await rejection(dep.fetch(`${server.url}/slow`, { deadlineMs: DEADLINE_MS }));

    const elapsed = Date.now() - started;
    expect(isDeadlineExceededError(error)).toBe(true);
    expect(error.attempts).toBeGreaterThanOrEqual(2);
    const budgets = server.requests.map((r) => Number(r.headers['sluice-deadline-ms']));
    expect(budgets.every((budget) => budget <= DEADLINE_MS)).toBe(true);
    // The first attempt may take its whole timeout; the second only what is left of the deadline.
    expect(budgets[0]).toBe(TIMEOUT_MS);
    expect(budgets[1]).toBeLessThan(DEADLINE_MS - TIMEOUT_MS + 1);
    await waitUntil(
      () => server.requests.every((r) => r.aborted),
      2000,
      () => 'an attempt past the deadline was never aborted',
      5,
    );
    // Generous bound: the loop ends at the deadline, not after another attempt or backoff.
    expect(elapsed).toBeLessThan(DEADLINE_MS + 300);
  });

  it('hedging: the second attempt answers first, wins, and the first is aborted; the hedge used a retry grant', async () => {
    // The hedge goes out only on a grant: a client of its own that waits for one longer than the
    // default 50 ms, which the loaded machine of a whole test run can pass (no hedge, then 'slow').
    const patient = new Sluice({
      baseUrls: [coordinator.url],
      namespace: 'shop',
      logger: false,
      decisionTimeoutMs: 1000,
    });
    try {
      const dep = patient.dependency('hedged', { idempotent: true, hedge: { delayMs: 50 }, timeoutMs: 3000 });
      const before = await retryDecisions(coordinator.url, 'hedged', 'granted');
      server.plan([ok('slow', 2000), ok('fast')]);

      const response = await dep.fetch(`${server.url}/search`);

      expect(await response.text()).toBe('fast');
      expect(server.requests.map((r) => r.headers['sluice-attempt'])).toEqual(['1', '2']);
      await waitUntil(
        () => server.requests[0].aborted,
        2000,
        () => 'the losing attempt was never aborted',
        5,
      );
      expect(await retryDecisions(coordinator.url, 'hedged', 'granted')).toBe(before + 1);
    } finally {
      await patient.close();
    }
  });

  it('serves no p99 or p95 yet: the automatic timeout and the p95 hedge delay use their fixed fallbacks', async () => {
    const dep = sluice.dependency('auto-timeout', {
      timeoutMs: 'auto',
      autoTimeout: { minMs: 50, maxMs: 750 },
      hedge: { delayMs: 'p95', fallbackDelayMs: 35 },
    });
    server.plan([], ok());
    await dep.fetch(`${server.url}/`);
    await sluice.flush();
    expect(dep.attemptTimeoutMs).toBe(750);
    expect(dep.hedgeDelayMs).toBe(35);
  });
});
