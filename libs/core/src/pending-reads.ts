/**
 * Timers that never call an answer late when it has arrived.
 *
 * Node runs expired timers before it reads sockets: after a busy turn of the event loop (a burst
 * of requests, a GC pause), a timeout raced against a reply fires although the reply already sits
 * unread in the socket. These helpers first let the loop poll its sockets twice more (so a poll
 * that could not take every ready socket at once gets a second go), then decide.
 */

/**
 * Runs `fn` after the event loop has polled its sockets twice more.
 * @example
 * setTimeout(() => afterPendingReads(check), timeoutMs);
 */
export function afterPendingReads(fn: () => void): void {
  setImmediate(setImmediate, fn);
}

/** A timer of {@link timeoutAfterPendingReads}. */
export interface PendingReadsTimer {
  /** Stops it, also when it is due and waiting for the reads. */
  cancel(): void;
}

/**
 * Calls `fn` `ms` from now, once the replies that arrived meanwhile have been read; unless
 * cancelled first (a reply read during that wait cancels it in time).
 * @example
 * const timer = timeoutAfterPendingReads(50, () => resolve(undefined));
 * answer.finally(() => timer.cancel());
 */
export function timeoutAfterPendingReads(ms: number, fn: () => void): PendingReadsTimer {
  let cancelled = false;
  const due = () => {
    if (!cancelled) fn();
  };
  const timer = setTimeout(afterPendingReads, ms, due);
  return {
    cancel() {
      cancelled = true;
      clearTimeout(timer);
    },
  };
}
