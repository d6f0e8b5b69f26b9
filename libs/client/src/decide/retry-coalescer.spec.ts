import type { RetryAsk, RetryDecision, RetryRequest } from '@sluice/protocol';
import { CoordinatorUnavailableError } from '../errors';
import { AskNotSentError, RetryCoalescer, type RetryAsking } from './retry-coalescer';
import { grantedDecision } from '../../../../test/support/decisions';

const TIMEOUTS = { timeoutMs: 1000, reAskWithinMs: 50 };

/** A decision that says which ask it answers. */
const answer = (ask: RetryRequest): RetryDecision =>
  grantedDecision({
    delayMs: ask.attempt,
    budget: { retries: 0, retriesSucceeded: 0, requests: 0, limit: 0, cap: 0, windowSeconds: 10 },
  });

/** A coordinator that records what it was asked; `refuse` says which batches it answers 400. */
function coordinator(refuse: (asks: RetryAsk[]) => boolean = () => false) {
  const batches: RetryAsk[][] = [];
  const singles: Array<{ dep: string; request: RetryRequest }> = [];
  const transport: RetryAsking = {
    retries: async (asks) => {
      batches.push(asks);
      if (refuse(asks)) throw new CoordinatorUnavailableError('asks.1.attempt must be ≥ 1', { status: 400 });
      return { decisions: asks.map(answer) };
    },
    retry: async (dep, request) => {
      singles.push({ dep, request });
      if (request.attempt < 1) throw new CoordinatorUnavailableError('attempt must be ≥ 1', { status: 400 });
      return answer(request);
    },
  };
  return { transport, batches, singles };
}

const settle = (promises: Array<Promise<RetryDecision>>) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        (d) => d.delayMs,
        (e: CoordinatorUnavailableError) => e.status,
      ),
    ),
  );

describe('RetryCoalescer', () => {
  it('sends the asks of one window as one batch, each with its own requestId, answered in order', async () => {
    const { transport, batches, singles } = coordinator();
    const coalescer = new RetryCoalescer(transport);

    const delays = await settle([1, 2, 3].map((attempt) => coalescer.retry(`dep-${attempt}`, { attempt }, TIMEOUTS)));

    expect(delays).toEqual([1, 2, 3]);
    expect(singles).toEqual([]);
    expect(batches).toHaveLength(1);
    expect(batches[0].map((ask) => ask.dep)).toEqual(['dep-1', 'dep-2', 'dep-3']);
    expect(new Set(batches[0].map((ask) => ask.requestId)).size).toBe(3);
  });

  it('sends a lone ask as POST …/retry', async () => {
    const { transport, batches, singles } = coordinator();
    await new RetryCoalescer(transport).retry('dep', { attempt: 1 }, TIMEOUTS);

    expect(batches).toEqual([]);
    expect(singles.map((s) => s.dep)).toEqual(['dep']);
  });

  it('a batch refused as a whole (400) is asked ask by ask with the same ids: each gets its own answer', async () => {
    const { transport, batches, singles } = coordinator(() => true);
    const coalescer = new RetryCoalescer(transport);

    const outcomes = await settle([1, 0, 2].map((attempt) => coalescer.retry('dep', { attempt }, TIMEOUTS)));

    expect(outcomes).toEqual([1, 400, 2]);
    expect(singles.map((s) => s.request.requestId)).toEqual(batches[0].map((ask) => ask.requestId));
  });

  it('any other failure of the batch is every ask’s failure, asked nothing more', async () => {
    const { transport, singles } = coordinator();
    transport.retries = async () => {
      throw new CoordinatorUnavailableError('store down', { status: 503, code: 'store_unavailable' });
    };
    const coalescer = new RetryCoalescer(transport);

    expect(await settle([1, 2].map((attempt) => coalescer.retry('dep', { attempt }, TIMEOUTS)))).toEqual([503, 503]);
    expect(singles).toEqual([]);
  });

  it('splits beyond 1,000 asks', async () => {
    const { transport, batches } = coordinator();
    const coalescer = new RetryCoalescer(transport);

    await settle(Array.from({ length: 1500 }, () => coalescer.retry('dep', { attempt: 1 }, TIMEOUTS)));

    expect(batches.map((batch) => batch.length)).toEqual([1000, 500]);
  });
});

describe('RetryCoalescer and asks that waited to go out', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('sends each ask with the deadline it has left, tells its caller when it went out, and drops one whose deadline passed', async () => {
    const { transport, batches, singles } = coordinator();
    const coalescer = new RetryCoalescer(transport);
    const sent: number[] = [];

    const late = coalescer.retry('dep', { attempt: 1, deadlineMs: 20 }, { ...TIMEOUTS, onSent: () => sent.push(1) });
    const onTime = coalescer.retry('dep', { attempt: 2, deadlineMs: 100 }, { ...TIMEOUTS, onSent: () => sent.push(2) });
    const lateOutcome = late.then(
      () => 'answered',
      (error: unknown) => (error instanceof AskNotSentError ? 'not sent' : String(error)),
    );
    // A busy event loop: 30 ms pass before the 2 ms window's timer runs.
    jest.setSystemTime(Date.now() + 30);
    await jest.advanceTimersByTimeAsync(2);

    expect(await lateOutcome).toBe('not sent');
    expect((await onTime).delayMs).toBe(2);
    expect(sent).toEqual([2]);
    expect(batches).toEqual([]);
    expect(singles.map((single) => single.request)).toEqual([expect.objectContaining({ attempt: 2, deadlineMs: 68 })]);
  });
});
