import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '@sluice/core';
import { ATTEMPT_HEADER, DEADLINE_HEADER, MAX_DURATION_MS } from '@sluice/protocol';
import { processClock } from '../coarse-clock';

/**
 * Response header a service sets when an SDK call it made while serving the request gave up: the
 * caller's SDK then does not retry it, so retries do not multiply across layers (gRPC calls this
 * pushback). The value is the reason the inner call gave up.
 * @example
 * if (response.headers.get(NO_RETRY_HEADER)) console.log('the service already retried');
 */
export const NO_RETRY_HEADER = 'sluice-no-retry';

/** Longest deadline accepted from a header: one day, as the coordinator's own bound. */
const MAX_DEADLINE_MS = MAX_DURATION_MS;

/**
 * What the server middleware learned from the incoming request, available to every SDK call made
 * while serving it.
 * @example
 * const context: SluiceRequestContext | undefined = currentContext();
 */
export interface SluiceRequestContext {
  /** When the caller's deadline ends, on this process's clock (epoch ms); absent when it sent none. */
  readonly deadlineAt?: number;
  /** The incoming request's `sluice-attempt`: 1 for a first attempt, more for a retry. */
  readonly attempt: number;
  /** Tells the caller not to retry this request (sets `sluice-no-retry` on the response, if still possible). */
  readonly pushback?: (reason: string) => void;
}

const storage = new AsyncLocalStorage<SluiceRequestContext>();

/**
 * The context of the request being served, if a Sluice middleware (or {@link runWithContext}) set one.
 * @example
 * const remaining = remainingDeadlineMs(); // undefined outside a request with a deadline
 * if ((currentContext()?.attempt ?? 1) > 1) log.info('serving a retry');
 */
export function currentContext(): SluiceRequestContext | undefined {
  return storage.getStore();
}

/**
 * Runs `fn` with `context` as the current request context (what the middlewares do).
 * @example
 * runWithContext({ attempt: 1, deadlineAt: Date.now() + 500 }, () => handleJob(job));
 */
export function runWithContext<T>(context: SluiceRequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/**
 * Runs `fn` under a deadline of `deadlineMs` from now (never later than an enclosing one): every
 * SDK call inside sends what is left, and none is sent once it has run out. For work that does not
 * start with an HTTP request, such as a queue consumer.
 * @example
 * await runWithDeadline(2000, () => payments.execute(({ signal }) => charge(order, signal), { idempotencyKey: order.id }));
 */
export function runWithDeadline<T>(deadlineMs: number, fn: () => T, clock: Clock = processClock): T {
  const outer = storage.getStore();
  let deadlineAt = deadlineAfter(deadlineMs, clock);
  if (outer?.deadlineAt !== undefined && outer.deadlineAt < deadlineAt) deadlineAt = outer.deadlineAt;
  return storage.run({ ...outer, attempt: outer?.attempt ?? 1, deadlineAt }, fn);
}

/**
 * What is left of the current request's deadline, in ms (0 when it has run out), or undefined.
 * @example
 * const budget = remainingDeadlineMs() ?? 1000;
 */
export function remainingDeadlineMs(clock: Clock = processClock): number | undefined {
  const deadlineAt = storage.getStore()?.deadlineAt;
  return deadlineAt === undefined ? undefined : Math.max(0, deadlineAt - clock.now());
}

/**
 * Incoming headers as Node, Express and Fastify give them: lower-case names.
 * @example
 * const headers: IncomingHeaders = req.headers;
 */
export type IncomingHeaders = Record<string, string | string[] | undefined>;

/**
 * Reads `sluice-deadline-ms` and `sluice-attempt` from incoming headers into a context. A malformed
 * value is ignored (no deadline; attempt 1).
 * @example
 * const context = contextFromHeaders(req.headers, { pushback: (reason) => res.setHeader(NO_RETRY_HEADER, reason) });
 */
export function contextFromHeaders(
  headers: IncomingHeaders,
  options: { clock?: Clock; pushback?: (reason: string) => void } = {},
): SluiceRequestContext {
  const deadlineMs = integerHeader(headers[DEADLINE_HEADER], 0, MAX_DEADLINE_MS);
  const attempt = integerHeader(headers[ATTEMPT_HEADER], 1, 100) ?? 1;
  const context: { deadlineAt?: number; attempt: number; pushback?: (reason: string) => void } = { attempt };
  if (deadlineMs !== undefined) context.deadlineAt = deadlineAfter(deadlineMs, options.clock ?? processClock);
  if (options.pushback) context.pushback = options.pushback;
  return context;
}

/**
 * The instant `deadlineMs` from now. No time left is a deadline long past (the epoch's start), not
 * this instant: the clock that reads it later may be a coarser one, a millisecond behind this one.
 */
function deadlineAfter(deadlineMs: number, clock: Clock): number {
  return deadlineMs <= 0 ? 0 : clock.now() + deadlineMs;
}

function integerHeader(value: string | string[] | undefined, min: number, max: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^\s*\d{1,12}\s*$/.test(text)) return undefined;
  const number = Number(text);
  return number < min ? undefined : Math.min(number, max);
}
