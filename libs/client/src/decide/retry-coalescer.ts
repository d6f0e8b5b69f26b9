import { MAX_RETRY_ASKS, type RetryAsk, type RetryDecision, type RetryRequest } from '@sluice/protocol';
import { CoordinatorUnavailableError, isCoordinatorUnavailableError } from '../errors';
import type { AskTimeouts, CoordinatorTransport } from '../transport/coordinator-transport';
import { newRequestId } from '../transport/re-ask';

/** The coordinator calls the coalescer sends. */
export type RetryAsking = Pick<CoordinatorTransport, 'retry' | 'retries'>;

/** How long the first ask of a batch waits for others, ms, by default. */
export const COALESCE_WINDOW_MS = 2;

/**
 * An ask the coalescer did not send: the call's deadline (`deadlineMs`) passed before the batch
 * went out. Nothing was asked, so nothing was decided or counted; it says nothing of the
 * coordinator.
 */
export class AskNotSentError extends Error {
  constructor() {
    super("the retry ask was not sent: the call's deadline passed before the batch went out");
    this.name = 'AskNotSentError';
  }
}

interface Waiting {
  dep: string;
  /** The ask as `POST …/retry` would send it, its `requestId` set. */
  request: RetryRequest;
  timeouts: AskTimeouts;
  /** When it was asked (epoch ms): its `deadlineMs` is what was left then. */
  askedAt: number;
  resolve(decision: RetryDecision): void;
  reject(error: unknown): void;
}

/**
 * Gathers the retry asks this process makes within a short window into one `POST /retries` (at
 * most {@link MAX_RETRY_ASKS} asks a request, split beyond), answered in order. The window starts
 * with the first ask and never outlasts the smallest time any ask may wait (its deadline, the
 * decision's re-ask time); a lone ask goes out as `POST …/retry`.
 *
 * Every ask carries its own `requestId`, so a batch that got no answer is asked again with the
 * same ids (the transport's re-asks) and decides nothing twice. A batch the coordinator refused as
 * a whole (a 4xx: one ask it found invalid, a route it does not know) decided nothing: each ask is
 * then asked alone, with its id, and gets its own answer or its own refusal; any other failure is
 * every ask's failure.
 * @example
 * const coalescer = new RetryCoalescer(transport);
 * const decision = await coalescer.retry('payments-api', { attempt: 1, status: 503 }, { timeoutMs: 1000 });
 */
export class RetryCoalescer {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the batch under way must go out at the latest (epoch ms). */
  private batchDueAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly transport: RetryAsking,
    private readonly windowMs = COALESCE_WINDOW_MS,
  ) {}

  /** Asks, with the asks made alongside it: the decision `POST …/retry` would give. */
  retry(dep: string, body: RetryRequest, timeouts: AskTimeouts): Promise<RetryDecision> {
    const request: RetryRequest = body.requestId === undefined ? { ...body, requestId: newRequestId() } : body;
    return new Promise<RetryDecision>((resolve, reject) => {
      const askedAt = Date.now();
      this.waiting.push({ dep, request, timeouts, askedAt, resolve, reject });
      if (this.waiting.length >= MAX_RETRY_ASKS) return this.send();
      const reAskWithinMs = timeouts.reAskWithinMs ?? timeouts.timeoutMs;
      const mayWaitMs = Math.min(this.windowMs, (request.deadlineMs ?? Infinity) / 2, reAskWithinMs / 2);
      const dueAt = askedAt + mayWaitMs;
      if (dueAt >= this.batchDueAt) return;
      this.batchDueAt = dueAt;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.send(), Math.max(0, Math.floor(mayWaitMs)));
    });
  }

  /**
   * Sends everything waiting, in batches of at most MAX_RETRY_ASKS, each ask with the deadline it
   * has left now (its timer may have fired late, behind a busy event loop), and tells each caller
   * its ask went out. An ask whose deadline passed meanwhile is not sent: the coordinator could
   * only refuse it.
   */
  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.batchDueAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    const waiting: Waiting[] = [];
    for (const entry of this.waiting) {
      const request = withDeadlineLeft(entry.request, now - entry.askedAt);
      if (request === undefined) entry.reject(new AskNotSentError());
      else waiting.push({ ...entry, request });
    }
    this.waiting = [];
    for (let start = 0; start < waiting.length; start += MAX_RETRY_ASKS) {
      void this.ask(waiting.slice(start, start + MAX_RETRY_ASKS));
    }
    for (const { timeouts } of waiting) timeouts.onSent?.();
  }

  private async ask(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return this.askAlone(batch[0]);
    try {
      const { decisions } = await this.transport.retries(
        batch.map(({ dep, request }): RetryAsk => ({ ...request, dep })),
        tightest(batch),
      );
      if (decisions?.length !== batch.length) {
        throw new CoordinatorUnavailableError(
          `the coordinator answered ${decisions?.length} decisions to ${batch.length} asks`,
        );
      }
      batch.forEach((entry, i) => entry.resolve(decisions[i]));
    } catch (error) {
      if (refusedAsAWhole(error)) {
        batch.forEach((entry) => void this.askAlone(entry));
        return;
      }
      batch.forEach((entry) => entry.reject(error));
    }
  }

  private askAlone({ dep, request, timeouts, resolve, reject }: Waiting): Promise<void> {
    return this.transport.retry(dep, request, timeouts).then(resolve, reject);
  }
}

/**
 * The ask with the deadline it has left after waiting `waitedMs` to be sent; undefined once none is
 * left (the coordinator could only refuse it).
 */
export function withDeadlineLeft(request: RetryRequest, waitedMs: number): RetryRequest | undefined {
  if (request.deadlineMs === undefined || waitedMs <= 0) return request;
  const deadlineMs = request.deadlineMs - waitedMs;
  return deadlineMs < 1 ? undefined : { ...request, deadlineMs };
}

/** The batch's request ends, and stops re-asking, as soon as its most pressed ask would. */
function tightest(batch: Waiting[]): AskTimeouts {
  let timeoutMs = Number.POSITIVE_INFINITY;
  let reAskWithinMs = Number.POSITIVE_INFINITY;
  for (const { timeouts } of batch) {
    timeoutMs = Math.min(timeoutMs, timeouts.timeoutMs);
    reAskWithinMs = Math.min(reAskWithinMs, timeouts.reAskWithinMs ?? timeouts.timeoutMs);
  }
  return { timeoutMs, reAskWithinMs };
}

/** A 4xx other than 429 (401 and 403 are config errors): the coordinator decided none of the asks. */
function refusedAsAWhole(error: unknown): boolean {
  if (!isCoordinatorUnavailableError(error) || error.status === undefined) return false;
  return error.status >= 400 && error.status < 500 && error.status !== 429;
}
