import { isRetriableFailure } from '@sluice/core';
import { MAX_DURATION_MS } from '@sluice/protocol';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { NO_RETRY_HEADER } from './context/request-context';
import type { AttemptContext, ExecuteOptions } from './execute-options';
import { HttpStatusError } from './errors';
import { readBody, send, type Agents } from './transport/http';

/**
 * `fetch`'s init, plus Sluice's per-call options.
 * @example
 * await sluice.fetch('payments-api', url, { method: 'POST', body, idempotencyKey: true, deadlineMs: 1500 });
 */
export interface SluiceFetchInit extends Omit<RequestInit, 'signal'> {
  signal?: AbortSignal | null;
  /** Default: true for GET, HEAD, OPTIONS, TRACE, PUT and DELETE; false for POST and PATCH. */
  idempotent?: boolean;
  /** Sends `Idempotency-Key` (the same on every attempt); `true` makes a random one. */
  idempotencyKey?: string | true;
  /** This call's deadline in ms (default: the dependency's). */
  deadlineMs?: number;
  /** What each attempt costs against the dependency's rate limit (default 1). */
  cost?: number;
}

/**
 * What `fetchThrough` needs of a dependency's policy.
 * @example
 * const policy: FetchingPolicy = sluice.dependency('payments-api');
 */
export interface FetchingPolicy {
  readonly options: { readonly connectTimeoutMs: number };
  execute<T>(fn: (context: AttemptContext) => Promise<T>, options: ExecuteOptions): Promise<T>;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const NULL_BODY_STATUSES = new Set([204, 205, 304]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;
/** The coordinator's bound on `retryAfterMs`. */
const MAX_RETRY_AFTER_MS = MAX_DURATION_MS;

/**
 * A `Retry-After` value in ms: delay-seconds or an HTTP-date (relative to `now`); undefined when
 * absent or malformed.
 * @example
 * parseRetryAfter('3', Date.now()); // 3000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:58 GMT')); // 2000
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP-date names its day and month; Date.parse alone would take "-1" for a year.
  const at = /[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/**
 * `fetch` through a dependency's policy: the request goes out with `node:http(s)` (keep-alive,
 * connect timeout), carrying `sluice-deadline-ms`, `sluice-attempt` and `Idempotency-Key`; 408,
 * 429 and 5xx are failures (their body buffered, `Retry-After` parsed); every other status
 * resolves as a `Response`. What `sluice.fetch` and `dependency.fetch` call.
 * @example
 * const res = await fetchThrough(payments, agents, 'http://payments/charges/42');
 */
export async function fetchThrough(
  policy: FetchingPolicy,
  agents: Agents,
  input: string | URL,
  init: SluiceFetchInit = {},
): Promise<Response> {
  const { idempotent, idempotencyKey, deadlineMs, cost, signal, ...requestInit } = init;
  const method = (requestInit.method ?? 'GET').toUpperCase();
  const key = idempotencyKey === true ? randomUUID() : idempotencyKey;
  // Request normalises headers and every kind of body once; attempts resend the same bytes.
  const prepared = new Request(input, { ...requestInit, method });
  const body = prepared.body ? Buffer.from(await prepared.arrayBuffer()) : undefined;
  const headers: Record<string, string> = { accept: '*/*' };
  prepared.headers.forEach((value, name) => (headers[name] = value));
  if (body) headers['content-length'] = String(body.length);
  const redirect = requestInit.redirect ?? 'follow';
  const connectTimeoutMs = policy.options.connectTimeoutMs;

  return policy.execute(
    async (attempt) => {
      const { response, url } = await sendFollowingRedirects(new URL(prepared.url), {
        method,
        headers: { ...headers, ...attempt.headers },
        body,
        signal: attempt.signal,
        redirect,
        connectTimeoutMs,
        agents,
      });
      const status = response.statusCode ?? 0;
      if (isRetriableFailure(status)) {
        const buffered = await readBody(response);
        throw new HttpStatusError(
          toResponse(response, url, method, buffered),
          parseRetryAfter(header(response, 'retry-after'), Date.now()),
          header(response, NO_RETRY_HEADER) !== undefined,
        );
      }
      return toResponse(response, url, method, undefined);
    },
    {
      signal: signal ?? undefined,
      idempotent: idempotent ?? IDEMPOTENT_METHODS.has(method),
      idempotencyKey: key,
      deadlineMs,
      cost,
    },
  );
}

interface RedirectingSend {
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  signal: AbortSignal;
  redirect: NonNullable<RequestInit['redirect']>;
  connectTimeoutMs: number;
  agents: Agents;
}

async function sendFollowingRedirects(
  start: URL,
  options: RedirectingSend,
): Promise<{ response: IncomingMessage; url: URL }> {
  let { method, body } = options;
  const headers = { ...options.headers };
  let url = start;
  for (let hops = 0; ; hops++) {
    const response = await send(url, {
      method,
      headers,
      body,
      signal: options.signal,
      connectTimeoutMs: options.connectTimeoutMs,
      agents: options.agents,
    });
    const status = response.statusCode ?? 0;
    const location = header(response, 'location');
    if (options.redirect === 'manual' || !REDIRECT_STATUSES.has(status) || location === undefined) {
      return { response, url };
    }
    response.resume();
    if (options.redirect === 'error') throw new TypeError(`unexpected redirect to ${location}`);
    if (hops >= MAX_REDIRECTS) throw new TypeError('too many redirects');
    const next = new URL(location, url);
    if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
      method = method === 'HEAD' ? 'HEAD' : 'GET';
      body = undefined;
      for (const name of ['content-length', 'content-type', 'content-encoding', 'content-language'])
        delete headers[name];
    }
    if (next.origin !== url.origin) delete headers.authorization;
    url = next;
  }
}

function toResponse(message: IncomingMessage, url: URL, method: string, buffered: Buffer | undefined): Response {
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const status = message.statusCode ?? 0;
  const nullBody = NULL_BODY_STATUSES.has(status) || method === 'HEAD';
  if (nullBody) message.resume();
  const body = nullBody ? null : (buffered ?? Readable.toWeb(message));
  const response = new Response(body as ConstructorParameters<typeof Response>[0], {
    status,
    statusText: message.statusMessage,
    headers,
  });
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}

function header(message: IncomingMessage, name: string): string | undefined {
  const value = message.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
