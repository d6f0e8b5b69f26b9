import request from 'supertest';
import { seededRandom, type RandomSource } from '@sluice/core';
import { MAX_RETRY_ASKS, type RetryAsk, type RetryDecision } from '@sluice/protocol';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';
import { sleep } from '../support/time';

/** No jitter, so a single and a batched answer can be compared delay for delay. */
const POLICIES = {
  namespaces: {
    shop: {
      default: {
        backoff: { baseMs: 50, capMs: 2000, jitter: 'none' },
        // A window longer than the test: no bucket ages out between the two sides' decisions.
        retryBudget: { ratio: 0.1, minRetriesPerSecond: 0.2, windowSeconds: 60, maxAttempts: 3 },
      },
    },
  },
};
const DEPS = ['pay', 'search', 'stock'];
const STATUSES = [503, 503, 429, 408, 500, 400, undefined];

/** Seeded asks over DEPS: retriable or not, idempotent or not, with deadlines and repeated request ids. */
function randomAsks(random: RandomSource, count: number): RetryAsk[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const ids: string[] = [];
  return Array.from({ length: count }, (_, i) => {
    const ask: RetryAsk = { dep: pick(DEPS), attempt: 1 + Math.floor(random() * 3), idempotent: random() < 0.9 };
    const status = pick(STATUSES);
    if (status === undefined) ask.error = pick(['timeout', 'connection'] as const);
    else ask.status = status;
    if (random() < 0.25) ask.deadlineMs = Math.floor(random() * 400);
    if (random() < 0.2) ask.retryAfterMs = Math.floor(random() * 300);
    const id = random();
    if (id < 0.15 && ids.length > 0) ask.requestId = pick(ids);
    else if (id < 0.6) ids.push((ask.requestId = `ask-${i}`));
    return ask;
  });
}

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('batched retry decisions end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const batch = (asks: object[]) => request(server).post('/v1/shop/retries').send({ asks });
  const retry = (dep: string, body: object) => request(server).post(`/v1/shop/deps/${dep}/retry`).send(body);
  const budgetOf = async (dep: string) => (await request(server).get(`/v1/shop/deps/${dep}`).expect(200)).body.budget;

  beforeAll(async () => {
    coordinator = await testCoordinator({ redis: useRedis, label: 'retry-batches', policies: POLICIES });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it.each([11, 12])('answers seeded asks (seed %i) in batches exactly as one by one', async (seed) => {
    const random = seededRandom(seed);
    // Each dependency twice, alike: `single-<dep>` asked one by one, `batched-<dep>` in batches.
    const deps = (side: string) =>
      DEPS.map((dep) => ({ dep: `${side}-${dep}`, requests: 40, successes: 40, failures: 0, slow: 0 }));
    await request(server)
      .post('/v1/shop/reports')
      .send({ reporter: 'pod-a', deps: [...deps('single'), ...deps('batched')] })
      .expect(200);
    const asks = randomAsks(random, 90);
    const one: RetryDecision[] = [];
    const many: RetryDecision[] = [];
    const slackMs: number[] = [];
    let straddledSoFar = false;
    for (let at = 0; at < asks.length;) {
      const chunk = asks.slice(at, (at += 1 + Math.floor(random() * 20)));
      // Both sides of a chunk in one second: their grants are counted in the same bucket.
      if (Date.now() % 1000 > 500) await sleep(1005 - (Date.now() % 1000));
      const started = Date.now();
      const answer = await batch(chunk.map((ask) => ({ ...ask, dep: `batched-${ask.dep}` }))).expect(200);
      many.push(...answer.body.decisions);
      for (const { dep, ...ask } of chunk) one.push((await retry(`single-${dep}`, ask).expect(200)).body);
      // A chunk whose two sides straddle a second (a loaded machine) may count their grants in
      // adjacent buckets; a budget's retryAfterMs follows its oldest grants, so every later denial may
      // then differ by that second too.
      const ended = Date.now();
      straddledSoFar ||= Math.floor(started / 1000) !== Math.floor(ended / 1000);
      slackMs.push(...chunk.map(() => ended - started + 1 + (straddledSoFar ? 1000 : 0)));
    }
    const withoutTimes = (decisions: RetryDecision[]) => decisions.map(({ retryAfterMs: _, ...rest }) => rest);
    expect(withoutTimes(many)).toEqual(withoutTimes(one));
    one.forEach((decision, i) => {
      if (decision.retryAfterMs === undefined) expect(many[i].retryAfterMs).toBeUndefined();
      else
        expect(Math.abs((many[i].retryAfterMs ?? Number.NaN) - decision.retryAfterMs)).toBeLessThanOrEqual(slackMs[i]);
    });
    const reasons = new Set(one.map((decision) => decision.reason));
    for (const reason of ['granted', 'budget_exhausted', 'deadline_exceeded', 'not_retriable', 'max_attempts']) {
      expect(reasons).toContain(reason);
    }
  });

  it('says when to ask again on a budget_exhausted denial, and only on a denial that waiting ends', async () => {
    const asks = Array.from({ length: 14 }, () => ({ dep: 'floor', attempt: 1, idempotent: true, status: 503 }));
    const { decisions } = (await batch(asks).expect(200)).body as { decisions: RetryDecision[] };
    // The floor alone: 0.2 × 60 = 12 retries in the window, counted in this second; they leave within 60 s.
    expect(decisions.map((decision) => decision.reason)).toEqual([
      ...Array(12).fill('granted'),
      'budget_exhausted',
      'budget_exhausted',
    ]);
    expect(decisions[11]).not.toHaveProperty('retryAfterMs');
    expect(decisions[12].retryAfterMs).toBeGreaterThan(58_900);
    expect(decisions[12].retryAfterMs).toBeLessThanOrEqual(60_000);
    const single = (await retry('floor', { attempt: 1, idempotent: true }).expect(200)).body;
    expect(single).toMatchObject({ reason: 'budget_exhausted', retryAfterMs: expect.any(Number) });
  });

  it.each([
    [
      [
        { dep: 'bad-a', attempt: 1, idempotent: true },
        { dep: 'bad-a', attempt: 0, idempotent: true },
      ],
      'asks.1.attempt',
    ],
    [
      [
        { dep: 'bad-a', attempt: 1 },
        { dep: 'Bad_A', attempt: 1 },
      ],
      'asks.1.dep',
    ],
    [[{ dep: 'bad-a', attempt: 1 }, { attempt: 1 }], 'asks.1.dep'],
    [
      [
        { dep: 'bad-a', attempt: 1 },
        { dep: 'bad-b', attempt: 1 },
        { dep: 'bad-a', attempt: 1, colour: 'red' },
      ],
      'asks.2.colour',
    ],
    [[{ dep: 'bad-a', attempt: 1, idempotent: true, status: 99 }], 'asks.0.status'],
    [[], 'asks'],
    [Array.from({ length: MAX_RETRY_ASKS + 1 }, () => ({ dep: 'bad-a', attempt: 1 })), 'asks'],
  ])('rejects the whole batch for one invalid ask, naming it, and decides nothing (%#)', async (asks, field) => {
    const answer = await batch(asks).expect(400);
    expect(answer.body).toMatchObject({ statusCode: 400, code: 'validation_failed' });
    expect(answer.body.details[0].field).toBe(field);
    for (const dep of ['bad-a', 'bad-b']) expect((await budgetOf(dep)).retries).toBe(0);
  });

  it(`decides ${MAX_RETRY_ASKS} asks over many dependencies in one request, in order`, async () => {
    const asks = Array.from({ length: MAX_RETRY_ASKS }, (_, i) => ({
      dep: `many-${i % 7}`,
      attempt: 1,
      idempotent: true,
      requestId: `r-${i}`,
    }));
    const { decisions } = (await batch(asks).expect(200)).body as { decisions: RetryDecision[] };
    expect(decisions).toHaveLength(MAX_RETRY_ASKS);
    // Each dependency's budget holds its floor of 12; asks past it are denied, in order.
    decisions.forEach((decision, i) =>
      expect(decision.reason).toBe(Math.floor(i / 7) < 12 ? 'granted' : 'budget_exhausted'),
    );
    // A repeat of the whole batch answers the kept grants, counting nothing twice.
    const again = (await batch(asks).expect(200)).body.decisions as RetryDecision[];
    expect(again.slice(0, 84)).toEqual(decisions.slice(0, 84));
    expect((await budgetOf('many-0')).retries).toBe(12);
  });
});
