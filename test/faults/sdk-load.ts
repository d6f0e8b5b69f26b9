import { Sluice } from '@sluice/client';

/** How often a call goes out. */
const TICK_MS = 25;

/**
 * The SDK's view of a fault: a service calling a dependency through the SDK, one call in ten
 * failing once with a 503 and then succeeding on the retry the SDK asks the fleet for (or, with
 * the fleet unreachable, its local fallback grants). A call that ends in an error is what an
 * application would have seen.
 */
export class SdkLoad {
  calls = 0;
  failures = 0;
  /** What the first failed call ended with. */
  firstFailure?: string;
  private readonly sluice: Sluice;
  private timer?: NodeJS.Timeout;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    urls: string[],
    private readonly dependency: string,
  ) {
    // A loaded test machine answers in more than the default 50 ms; production need not wait so long.
    this.sluice = new Sluice({ baseUrls: urls, namespace: 'shop', decisionTimeoutMs: 1000 });
  }

  start(): void {
    const dependency = this.sluice.dependency(this.dependency, { idempotent: true });
    this.timer = setInterval(() => {
      // One call in ten fails its first attempt: the fleet's breaker stays closed (10 % < 50 %).
      let failing = this.calls % 10 === 0;
      const call = dependency
        .execute(() => {
          if (failing) {
            failing = false;
            throw Object.assign(new Error('dependency unavailable'), { status: 503 });
          }
          return 'ok';
        })
        .then(
          () => undefined,
          (error: Error) => {
            this.failures++;
            this.firstFailure ??= `${error.name}: ${error.message}`;
          },
        );
      this.calls++;
      this.pending.add(call);
      void call.finally(() => this.pending.delete(call));
    }, TICK_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.pending]);
    await this.sluice.close();
  }

  /** "N of M calls failed". */
  summary(): string {
    const first = this.firstFailure === undefined ? '' : ` (${this.firstFailure})`;
    return `${this.failures} of ${this.calls} calls failed${first}`;
  }
}
