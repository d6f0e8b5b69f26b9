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
  /** The API's error code of the answer (`store_unavailable`, `overloaded`, …), when it had one. */
  code?: string;
}

/** How often every dependency is asked (once per tick, round-robin over the instances). */
const TICK_MS = 50;
/** Asking again after no decision waits this long. */
const REASK_MS = 50;
/** One ask's cap, so a hung instance is an error, not a stall. */
const ASK_CAP_MS = 1000;
/** An ask that got no decision is asked again for at most this long, then abandoned. */
const GIVE_UP_MS = 30_000;

export class DecisionLoad {
  readonly errors: LoadError[] = [];
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
    for (;;) {
      const url = this.urls[this.turn++ % this.urls.length];
      const { status, code } = await this.once(url, dep, requestId);
      if (status === 200) return;
      this.errors.push({ at: performance.now(), dep, status, ...(code === undefined ? {} : { code }) });
      if (performance.now() - startedAt > GIVE_UP_MS) return;
      await new Promise((resolve) => setTimeout(resolve, REASK_MS));
    }
  }

  private async once(url: string, dep: string, requestId: string): Promise<{ status: number; code?: string }> {
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
    } catch {
      return { status: 0 }; // no answer: the instance is gone or hung
    }
  }
}

/** How long after `from` the last of `errors` came (0 without any): how long callers got no decision. */
export function unavailableMs(errors: LoadError[], from: number): number {
  return errors.reduce((longest, error) => Math.max(longest, error.at - from), 0);
}
