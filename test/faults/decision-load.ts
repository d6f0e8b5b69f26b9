import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/**
 * Steady load of retry asks on a fleet, asked the way the SDK asks: each ask carries a fresh
 * `requestId`, an ask that got no decision (a 503, a timeout) is asked again with the same id
 * until it gets one, and a grant is counted once per id. So afterwards the retries the store
 * counted can be held against the grants callers were given: any difference is an over-count.
 */

export interface LoadError {
  /** performance.now() of the answer. */
  at: number;
  dep: string;
  status: number;
  /**
   * The API's error code of the answer (`store_unavailable`, `overloaded`, …), when it had one;
   * without an answer, why not (`timeout`, or the socket's error code such as `ECONNRESET`).
   */
  code?: string;
}

/** One ask sent. */
export interface SentAsk {
  /** performance.now() when it was sent. */
  at: number;
  dep: string;
  /** How long its answer, or its failure, took. */
  ms: number;
}

/** How often every dependency is asked (once per tick, round-robin over the instances). */
const TICK_MS = 50;
/**
 * Asking again after no decision waits this long, doubled after each failed ask up to
 * MAX_REASK_MS. Without the backoff the asks of an outage pile up (a new one every tick, each asked
 * again every 50 ms until it is answered): some 5,000 failed asks in a 5 s Cluster failover, a
 * storm of the load's own making that slowed the healthy shards' answers to 400 ms on a loaded
 * two-core machine, and past ASK_CAP_MS on a slower one. A new ask every tick still dates the
 * last failure to within a tick.
 */
const REASK_MS = 50;
const MAX_REASK_MS = 400;
/** One ask's cap, so a hung instance is an error, not a stall. */
const ASK_CAP_MS = 1000;
/** An ask that got no decision is asked again for at most this long, then abandoned. */
const GIVE_UP_MS = 30_000;

export class DecisionLoad {
  readonly errors: LoadError[] = [];
  /** Every ask sent, with how long its answer (or its failure) took. */
  readonly sent: SentAsk[] = [];
  /** Per dependency: the request ids answered `allow: true`. */
  readonly granted = new Map<string, Set<string>>();
  /** Per dependency: decisions answered (allowed or not). */
  readonly decided = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private readonly pending = new Set<Promise<void>>();
  private turn = 0;

  constructor(
    private readonly urls: string[],
    private readonly deps: string[],
  ) {
    for (const dep of deps) this.granted.set(dep, new Set());
  }

  start(): void {
    this.timer = setInterval(() => {
      for (const dep of this.deps) this.track(this.ask(dep, randomUUID()));
    }, TICK_MS);
  }

  /** Stops asking; resolves once every ask in flight has its decision (or was abandoned). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Errors for `deps` answered in [from, to) (performance.now()). */
  errorsOf(deps: string[], from = 0, to = Infinity): LoadError[] {
    return this.errors.filter((error) => deps.includes(error.dep) && error.at >= from && error.at < to);
  }

  private track(ask: Promise<void>): void {
    this.pending.add(ask);
    void ask.finally(() => this.pending.delete(ask));
  }

  private async ask(dep: string, requestId: string): Promise<void> {
    const startedAt = performance.now();
    for (let wait = REASK_MS; ; wait = Math.min(wait * 2, MAX_REASK_MS)) {
      const url = this.urls[this.turn++ % this.urls.length];
      const { status, code } = await this.once(url, dep, requestId);
      if (status === 200) return;
      this.errors.push({ at: performance.now(), dep, status, ...(code === undefined ? {} : { code }) });
      if (performance.now() - startedAt > GIVE_UP_MS) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** The slowest of the asks for `deps` sent at or after `from` (0 without any). */
  slowestOf(deps: string[], from = 0): number {
    return this.sent
      .filter((ask) => deps.includes(ask.dep) && ask.at >= from)
      .reduce((slowest, ask) => Math.max(slowest, ask.ms), 0);
  }

  private async once(url: string, dep: string, requestId: string): Promise<{ status: number; code?: string }> {
    const at = performance.now();
    const answer = await this.send(url, dep, requestId);
    this.sent.push({ at, dep, ms: performance.now() - at });
    return answer;
  }

  private async send(url: string, dep: string, requestId: string): Promise<{ status: number; code?: string }> {
    try {
      const response = await fetch(`${url}/v1/shop/deps/${dep}/retry`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ attempt: 1, idempotent: true, status: 503, requestId }),
        signal: AbortSignal.timeout(ASK_CAP_MS),
      });
      const body = (await response.json().catch(() => ({}))) as { allow?: boolean; code?: string };
      if (response.status === 200) {
        this.decided.set(dep, (this.decided.get(dep) ?? 0) + 1);
        if (body.allow) this.granted.get(dep)?.add(requestId);
      }
      return { status: response.status, code: body.code };
    } catch (error) {
      return { status: 0, code: noAnswerCode(error) }; // no answer: the instance is gone or hung
    }
  }
}

/** Why a fetch got no answer: `timeout` for the ask's own cap, else the underlying socket error's code. */
function noAnswerCode(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'timeout';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? String(error);
}

/** How long after `from` the last of `errors` came (0 without any): how long callers got no decision. */
export function unavailableMs(errors: LoadError[], from: number): number {
  return errors.reduce((longest, error) => Math.max(longest, error.at - from), 0);
}
