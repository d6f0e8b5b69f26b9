import { LATENCY_BOUNDS_MS, seededRandom, type RandomSource } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type RetryBudgetPolicy } from '@sluice/protocol';
import type { DependencyRef, OutcomePolicy, RetryAskInput, RetryAskOutcome, RetryBudgetOutcome, Store } from '../src';
import { batch, type StoreUnderTest } from './store-conformance';

/** floor(0.1 × requests + 1 × 10): with 50 requests reported, 15 retries. */
const BUDGET: RetryBudgetPolicy = { ratio: 0.1, minRetriesPerSecond: 1, windowSeconds: 10, maxAttempts: 3 };
const WINDOWS: OutcomePolicy = {
  budgetWindowSeconds: 10,
  breaker: { ...DEFAULT_DEPENDENCY_POLICY.breaker, minimumCalls: 1_000_000 },
};

type Decision = RetryAskOutcome;

/** Seeded asks: delays and deadlines that sometimes do not fit, and request ids that sometimes repeat. */
function randomAsks(random: RandomSource, count: number): RetryAskInput[] {
  const ids: string[] = [];
  return Array.from({ length: count }, (_, i) => {
    const delayMs = Math.floor(random() * 400);
    const ask: RetryAskInput = { delayMs };
    if (random() < 0.1) ask.read = true;
    if (random() < 0.2) ask.deadlineMs = Math.floor(random() * 500);
    const pick = random();
    if (pick < 0.15 && ids.length > 0) ask.requestId = ids[Math.floor(random() * ids.length)];
    else if (pick < 0.6) ids.push((ask.requestId = `ask-${i}`));
    return ask;
  });
}

/** Chunk sizes 1–12 that cover the asks. */
function chunksOf<T>(random: RandomSource, items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  for (let at = 0; at < items.length;) {
    const size = 1 + Math.floor(random() * 12);
    chunks.push(items.slice(at, at + size));
    at += size;
  }
  return chunks;
}

/**
 * On a real clock, starts a step early enough in a second that it ends in the same one: the two
 * sides of a comparison then count their grants in the same bucket.
 */
async function startEarlyInASecond(subject: StoreUnderTest): Promise<void> {
  if (!subject.redis) return;
  const intoSecond = Date.now() % 1000;
  if (intoSecond > 800) await subject.pass(1005 - intoSecond);
}

/**
 * The asks decided one by one on `single` and in batches on `batched` (two dependencies set up
 * alike): each chunk in one decideRetries call, then the same asks one decideRetry each.
 * Returns both sides' decisions and, per ask, the most the store's clock can have moved between them.
 */
async function decideBothWays(
  subject: StoreUnderTest,
  [single, batched]: [DependencyRef, DependencyRef],
  chunks: RetryAskInput[][],
  between?: (chunk: number) => Promise<void>,
): Promise<{ one: Decision[]; many: Decision[]; slackMs: number[] }> {
  const { store } = subject;
  const one: Decision[] = [];
  const many: Decision[] = [];
  const slackMs: number[] = [];
  for (const [index, chunk] of chunks.entries()) {
    await between?.(index);
    await startEarlyInASecond(subject);
    const started = Date.now();
    const { decisions } = await store.decideRetries(batched, { budget: BUDGET, asks: chunk });
    many.push(...decisions);
    for (const ask of chunk) one.push(await decideOne(store, single, ask));
    // On a real clock, a chunk whose two sides straddle a second may count grants in adjacent buckets.
    const ended = Date.now();
    const straddled = Math.floor(started / 1000) !== Math.floor(ended / 1000);
    slackMs.push(...chunk.map(() => (subject.redis ? ended - started + 1 + (straddled ? 1000 : 0) : 0)));
  }
  return { one, many, slackMs };
}

/** What the single path answers: decideRetry, or for an ask denied before the store, readDependency's budget. */
async function decideOne(store: Store, ref: DependencyRef, ask: RetryAskInput): Promise<Decision> {
  if (ask.read) {
    const { budget } = await store.readDependency(ref, { budget: BUDGET, outcomeWindowSeconds: 10 });
    return { verdict: null, delayMs: ask.delayMs, budget, retryAfterMs: null };
  }
  const { verdict, delayMs, budget, retryAfterMs }: RetryBudgetOutcome = await store.decideRetry(ref, {
    budget: BUDGET,
    ...ask,
  });
  return { verdict, delayMs, budget, retryAfterMs };
}

/**
 * Equal answers; a retryAfterMs may differ by as much as the store's clock moved between the two,
 * after `offsetMs`: how much later the batched side's state was set up (a trip's end).
 */
function expectSameAnswers(
  { one, many, slackMs }: { one: Decision[]; many: Decision[]; slackMs: number[] },
  offsetMs = 0,
): void {
  expect(many).toHaveLength(one.length);
  const withoutTimes = (decisions: Decision[]) => decisions.map(({ retryAfterMs: _, ...rest }) => rest);
  expect(withoutTimes(many)).toEqual(withoutTimes(one));
  one.forEach((decision, i) => {
    const batchedAfter = many[i].retryAfterMs;
    if (decision.retryAfterMs === null) expect(batchedAfter).toBeNull();
    else {
      const apart = (batchedAfter ?? Number.NaN) - decision.retryAfterMs - offsetMs;
      expect(Math.abs(apart)).toBeLessThanOrEqual(slackMs[i]);
    }
  });
}

let sequence = 0;
const twoRefs = (): [DependencyRef, DependencyRef] => {
  sequence += 1;
  return [
    { namespace: 'batches', dependency: `single-${sequence}` },
    { namespace: 'batches', dependency: `batched-${sequence}` },
  ];
};

async function reportBoth(
  store: Store,
  refs: DependencyRef[],
  requests: number,
  retriesSucceeded?: number,
): Promise<void> {
  for (const ref of refs) await store.recordOutcomes(ref, batch({ requests, retriesSucceeded }), WINDOWS);
}

/** decideRetries against decideRetry: the same asks in the same order get the same answers. */
export function describeRetryBatchConformance(label: string, create: () => Promise<StoreUnderTest>): void {
  describe(`Retry batches: ${label}`, () => {
    let subject: StoreUnderTest;
    beforeAll(async () => {
      subject = await create();
    });
    afterAll(async () => {
      await subject.cleanup();
    });

    it.each([1, 2, 3])(
      'answers seeded random asks (seed %i) in batches exactly as one by one',
      async (seed) => {
        const random = seededRandom(seed);
        const refs = twoRefs();
        await reportBoth(subject.store, refs, 50);
        const chunks = chunksOf(random, randomAsks(random, 60));
        // Every fourth chunk, more requests are reported on both sides: the budget refills mid-sequence.
        const decided = await decideBothWays(subject, refs, chunks, async (chunk) => {
          if (chunk > 0 && chunk % 4 === 0) await reportBoth(subject.store, refs, 20);
        });
        expectSameAnswers(decided);
        const verdicts = new Set(decided.one.map((decision) => decision.verdict));
        expect(verdicts).toEqual(new Set(['granted', 'budget_exhausted', 'deadline_exceeded', null]));
      },
      30_000,
    );

    it.each([4, 5])(
      'answers seeded random asks (seed %i) in batches exactly as one by one, with retries that succeeded reported between them',
      async (seed) => {
        const random = seededRandom(seed);
        const refs = twoRefs();
        await reportBoth(subject.store, refs, 50);
        const chunks = chunksOf(random, randomAsks(random, 80));
        // Every third chunk, both sides hear of retries that succeeded: an adaptive budget gives them back.
        const decided = await decideBothWays(subject, refs, chunks, async (chunk) => {
          if (chunk > 0 && chunk % 3 === 0) await reportBoth(subject.store, refs, 0, 4);
        });
        expectSameAnswers(decided);
        // The refunds took effect: grants past the limit, and denials after them.
        const refunded = decided.one.filter(
          ({ verdict, budget }) => verdict === 'granted' && budget.retries > budget.limit,
        );
        expect(refunded.length).toBeGreaterThan(0);
        expect(decided.one.some(({ verdict }) => verdict === 'budget_exhausted')).toBe(true);
      },
      30_000,
    );

    it('answers a tripped breaker the same both ways, with the time left of the trip', async () => {
      const random = seededRandom(7);
      const refs = twoRefs();
      const ends: number[] = [];
      for (const ref of refs) {
        const { record } = await subject.store.setBreaker(ref, { action: 'trip', reason: 'test', durationMs: 60_000 });
        ends.push(record.openUntil ?? Number.NaN);
      }
      const decided = await decideBothWays(subject, refs, chunksOf(random, randomAsks(random, 20)));
      expectSameAnswers(decided, ends[1] - ends[0]);
      for (const decision of decided.many.filter((many) => many.verdict !== null)) {
        expect(decision.verdict).toBe('breaker_open');
        expect(decision.retryAfterMs).toBeGreaterThan(50_000);
        expect(decision.retryAfterMs).toBeLessThanOrEqual(60_000);
      }
    });

    it('says when an exhausted budget grants again: when its oldest retries leave the window', async () => {
      const [ref] = twoRefs();
      // The floor alone: 10 retries in the window.
      const asks = Array.from({ length: 11 }, () => ({ delayMs: 0 }));
      const { decisions } = await subject.store.decideRetries(ref, { budget: BUDGET, asks });
      expect(decisions.map((decision) => decision.verdict)).toEqual([...Array(10).fill('granted'), 'budget_exhausted']);
      expect(decisions[9].retryAfterMs).toBeNull();
      // All ten were counted in one second: it leaves the window within windowSeconds.
      const { retryAfterMs } = decisions[10];
      expect(retryAfterMs).toBeGreaterThan(BUDGET.windowSeconds * 1000 - 1100);
      expect(retryAfterMs).toBeLessThanOrEqual(BUDGET.windowSeconds * 1000);
    });

    it('reads only the budget for an ask decided before the store: the outcome and latency windows stay whole', async () => {
      const [ref] = twoRefs();
      const latency = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
      latency[3] = 4;
      await subject.store.recordOutcomes(ref, batch({ requests: 4, successes: 3, failures: 1, latency }), WINDOWS);
      // Past the first second of the window, so a read over one second would drop what was reported.
      await subject.pass(1100);
      await subject.store.decideRetries(ref, { budget: BUDGET, asks: [{ delayMs: 0, read: true }] });
      const { outcomes, latency: read } = await subject.store.readDependency(ref, {
        budget: BUDGET,
        outcomeWindowSeconds: 10,
      });
      expect(outcomes).toEqual({ successes: 3, failures: 1, slow: 0 });
      expect(read[3]).toBe(4);
    });

    it('decides one batch as one step: the breaker it answers with carries a transition once', async () => {
      const [ref] = twoRefs();
      await subject.store.setBreaker(ref, { action: 'trip', reason: 'test', durationMs: 1 });
      await subject.pass(5);
      const asks = [{ delayMs: 0 }, { delayMs: 0 }];
      const { decisions, breaker } = await subject.store.decideRetries(ref, { budget: BUDGET, asks });
      expect(breaker.transitions.map(({ from, to }) => `${from}>${to}`)).toEqual(['forced_open>closed']);
      expect(decisions.map((decision) => decision.verdict)).toEqual(['granted', 'granted']);
    });
  });
}
