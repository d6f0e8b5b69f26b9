import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER } from '@sluice/protocol';
import { sleep } from './abortable-sleep';

export interface IdempotentFetchOptions {
  /** The key to send; a new random one when omitted (and none is in the headers). */
  idempotencyKey?: string;
  /** Most attempts while the answer is 409 `in_flight`, the first included. Default 10. */
  maxAttempts?: number;
  /** Longest wait between two attempts. Default 5000 ms. */
  maxWaitMs?: number;
  /** Called before each wait, with the attempt that got 409 and the wait. */
  onInFlight?: (attempt: number, waitMs: number) => void;
  fetch?: typeof fetch;
}

/**
 * Sends a request with an `Idempotency-Key` and, while the server answers 409 `in_flight` (the
 * same key is being processed), waits as told (`retryAfterMs`, else `Retry-After`) and sends it
 * again, until it gets the response (the original, replayed) or runs out of attempts, when it
 * returns the last 409. Any other answer is returned as it is. The body must be re-sendable
 * (a string, bytes or form data, not a stream).
 *
 * @example
 * const res = await idempotentFetch('https://shop/orders', { method: 'POST', body: JSON.stringify(order), headers }, { idempotencyKey: order.id });
 * res.headers.get('idempotent-replayed'); // 'true' when an earlier attempt's response was replayed
 */
export async function idempotentFetch(
  input: string | URL,
  init: RequestInit = {},
  options: IdempotentFetchOptions = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (options.idempotencyKey !== undefined) headers.set(IDEMPOTENCY_KEY_HEADER, options.idempotencyKey);
  if (!headers.has(IDEMPOTENCY_KEY_HEADER)) headers.set(IDEMPOTENCY_KEY_HEADER, randomUUID());
  const send = options.fetch ?? ((url, request) => fetch(url, request));
  const maxAttempts = options.maxAttempts ?? 10;
  for (let attempt = 1; ; attempt++) {
    const response = await send(input, { ...init, headers });
    if (response.status !== 409 || attempt >= maxAttempts) return response;
    const body = (await response
      .clone()
      .json()
      .catch(() => undefined)) as { code?: string; retryAfterMs?: number } | undefined;
    if (body?.code !== 'in_flight') return response;
    await response.arrayBuffer();
    const retryAfter = Number(response.headers.get('retry-after'));
    const told = body.retryAfterMs ?? (Number.isFinite(retryAfter) ? retryAfter * 1000 : 100);
    const waitMs = Math.min(Math.max(told, 0), options.maxWaitMs ?? 5000);
    options.onInFlight?.(attempt, waitMs);
    await sleep(waitMs, init.signal ?? undefined);
  }
}
