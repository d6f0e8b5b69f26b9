import { StoreUnavailableError } from '../errors';

/**
 * Bounds how long a Redis reply may take, timing Redis rather than the event loop.
 *
 * A plain `setTimeout` raced against the reply fails calls whose reply is already in the socket:
 * Node runs expired timers before it reads sockets, so any event-loop stall at least as long as
 * the timeout (a burst of requests, a GC pause) fails every call outstanding across it. Here the
 * timer only starts the check: it waits for the loop to read what has arrived (two turns of the
 * poll phase, so a poll that could not take every ready socket at once gets a second go), and
 * fails the call only if its reply is still missing then.
 *
 * @example
 * const reply = await withReplyDeadline(client.ping(), 50);
 */
export function withReplyDeadline<T>(operation: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        afterPendingReads(() => {
          if (settled) return;
          settled = true;
          reject(new StoreUnavailableError(`Redis did not answer within ${timeoutMs} ms`));
        }),
      timeoutMs,
    );
    operation.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(
          error instanceof StoreUnavailableError
            ? error
            : new StoreUnavailableError(`Redis failed: ${(error as Error).message}`, { cause: error }),
        );
      },
    );
  });
}

/** Runs `check` after the event loop has polled its sockets twice more. */
function afterPendingReads(check: () => void): void {
  setImmediate(() => setImmediate(check));
}
