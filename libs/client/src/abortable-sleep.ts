/**
 * Waits `ms`, or rejects with the signal's reason as soon as it aborts (at once if it already has).
 * It never ends early: a timer can fire up to a millisecond before its time (Node times it on a
 * whole-millisecond clock), and a wait for `Retry-After` or a rate limit's `retryAfterMs` that
 * ends early is refused again; so the rest is waited out.
 * @example
 * await sleep(backoffMs, call.signal);
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 && !signal) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const endsAt = performance.now() + ms;
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const wake = () => {
      const left = endsAt - performance.now();
      if (left > 0) {
        timer = setTimeout(wake, Math.ceil(left));
        return;
      }
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    let timer = setTimeout(wake, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
