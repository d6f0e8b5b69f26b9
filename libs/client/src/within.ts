import { timeoutAfterPendingReads, type PendingReadsTimer } from '@sluice/core';

/**
 * The promise's value, if it settles within `ms`; undefined if it is later (it may still settle).
 * A rejection within `ms` rejects. An answer that arrived in time but waits unread behind a busy
 * turn of the event loop counts as in time.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: PendingReadsTimer | undefined;
  const late = new Promise<undefined>((resolve) => (timer = timeoutAfterPendingReads(ms, () => resolve(undefined))));
  try {
    return await Promise.race([promise, late]);
  } finally {
    timer?.cancel();
  }
}
