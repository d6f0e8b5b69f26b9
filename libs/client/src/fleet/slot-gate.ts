/**
 * The calls of this process waiting for a concurrency slot of one dependency, in arrival order:
 * each waits a while, or less when one of this process's attempts gives its slot back (the first
 * waiter is woken first).
 */
export class SlotGate {
  private readonly waiters: Array<() => void> = [];

  /** Waits `ms`, or until {@link released} wakes this waiter. Rejects with the signal's reason. */
  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const index = this.waiters.indexOf(wake);
        if (index >= 0) this.waiters.splice(index, 1);
      };
      const wake = () => {
        leave();
        resolve();
      };
      const onAbort = () => {
        leave();
        reject(signal!.reason);
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(wake);
    });
  }

  /** A slot was given back: the first waiter asks again. */
  released(): void {
    this.waiters[0]?.();
  }
}
