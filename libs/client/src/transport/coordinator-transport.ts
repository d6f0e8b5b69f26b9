import type { IncomingMessage } from 'node:http';
import { timeoutAfterPendingReads } from '@sluice/core';
import type {
  AdmitDecision,
  AdmitRequest,
  DependencyView,
  LeaseRenewal,
  ReportRequest,
  ReportResponse,
  RetryAsk,
  RetryBatchDecision,
  RetryDecision,
  RetryRequest,
} from '@sluice/protocol';
import { ConfigError, CoordinatorUnavailableError, isConfigError } from '../errors';
import { HeadTimeoutError, readBody, send, type Agents } from './http';
import { ReAsks, newRequestId, unanswered } from './re-ask';

export interface CoordinatorTransportOptions {
  baseUrls: string[];
  token?: string;
  namespace: string;
  agents: Agents;
  connectTimeoutMs: number;
}

/** A dependency view read with `If-None-Match`: `undefined` view means 304 (unchanged). */
export interface ViewRead {
  view?: DependencyView;
  etag?: string;
}

/** How long a call may take, re-asks included. */
export interface AskTimeouts {
  /** The whole call, every exchange of it, ends within this many ms of the first send. */
  timeoutMs: number;
  /** A re-ask goes out only within this many ms of the first send (while the caller still waits); default `timeoutMs`. */
  reAskWithinMs?: number;
  /**
   * For an ask that may wait to be sent (a coalesced retry ask): called when it goes out, so that
   * its caller's wait for the answer starts then.
   */
  onSent?: () => void;
}

/**
 * The SDK's calls to the coordinator. A 401 or 403 (the token is refused) is a {@link ConfigError};
 * every other failure (no connection, timeout, any other non-2xx answer such as 503
 * `store_unavailable`) is a {@link CoordinatorUnavailableError}; a failure without an answer moves
 * on to the next base URL for the following call.
 *
 * Decisions (`retry`, `retries`, `admit`) carry a `requestId` (one per ask). A call that gets no answer is asked again
 * within its time (see {@link ReAsks}): after a 503 `overloaded` or a connection never made, any
 * call, on another instance; after any other 503, a 502 or 504, a lost connection or a timeout, a
 * decision only, with the same `requestId`, so the coordinator answers the first outcome rather
 * than deciding twice.
 */
export class CoordinatorTransport {
  private current = 0;
  private readonly baseUrls: URL[];

  constructor(private readonly options: CoordinatorTransportOptions) {
    this.baseUrls = options.baseUrls.map((url) => new URL(url.endsWith('/') ? url : `${url}/`));
  }

  /** POST /v1/{ns}/deps/{dep}/retry, with a `requestId` (a fresh one unless the body has one). */
  retry(dep: string, body: RetryRequest, timeouts: AskTimeouts): Promise<RetryDecision> {
    const request: RetryRequest = body.requestId === undefined ? { ...body, requestId: newRequestId() } : body;
    return this.json('POST', `deps/${dep}/retry`, request, timeouts, true);
  }

  /**
   * POST /v1/{ns}/retries: many retry asks in one request, each with its own `requestId` (the
   * caller sets them), so a batch that got no answer is asked again as it was, with the same ids.
   */
  retries(asks: RetryAsk[], timeouts: AskTimeouts): Promise<RetryBatchDecision> {
    return this.json('POST', 'retries', { asks }, timeouts, true);
  }

  /** POST /v1/{ns}/deps/{dep}/admit, with a fresh `requestId`, and the call's cost against a rate limit when it is not 1. */
  admit(dep: string, timeouts: AskTimeouts, cost = 1): Promise<AdmitDecision> {
    const request: AdmitRequest = cost === 1 ? { requestId: newRequestId() } : { cost, requestId: newRequestId() };
    return this.json('POST', `deps/${dep}/admit`, request, timeouts, true);
  }

  /** DELETE /v1/{ns}/deps/{dep}/leases/{id} (204); an unknown or expired lease is a 404. */
  async releaseLease(dep: string, id: string, timeoutMs: number): Promise<void> {
    const path = `deps/${dep}/leases/${encodeURIComponent(id)}`;
    await this.ask<void>('DELETE', path, undefined, { timeoutMs }, false, (response, left) =>
      this.parse<void>(response, left, true),
    );
  }

  /** POST /v1/{ns}/deps/{dep}/leases/{id}/renew; an unknown or expired lease is a 404. */
  renewLease(dep: string, id: string, timeoutMs: number): Promise<LeaseRenewal> {
    return this.json('POST', `deps/${dep}/leases/${encodeURIComponent(id)}/renew`, undefined, { timeoutMs }, false);
  }

  /** POST /v1/{ns}/reports */
  report(body: ReportRequest, timeoutMs: number): Promise<ReportResponse> {
    return this.json('POST', 'reports', body, { timeoutMs }, false);
  }

  /** GET /v1/{ns}/deps/{dep} with If-None-Match. */
  readDependency(dep: string, etag: string | undefined, timeoutMs: number): Promise<ViewRead> {
    const headers: Record<string, string> = etag ? { 'if-none-match': etag } : {};
    return this.ask<ViewRead>(
      'GET',
      `deps/${dep}`,
      undefined,
      { timeoutMs },
      false,
      async (response, left) => {
        const newEtag = header(response, 'etag') ?? etag;
        if (response.statusCode === 304) {
          response.resume();
          return { etag: newEtag };
        }
        return { view: await this.parse<DependencyView>(response, left), etag: newEtag };
      },
      headers,
    );
  }

  /** GET /v1/{ns}/events?deps=…: resolves with the open stream (status 200) or throws. */
  async openEvents(deps: string[], signal: AbortSignal, timeoutMs: number): Promise<IncomingMessage> {
    const query = `events?deps=${deps.map(encodeURIComponent).join(',')}`;
    const index = this.current;
    const response = await this.request(
      index,
      'GET',
      query,
      undefined,
      timeoutMs,
      { accept: 'text/event-stream' },
      signal,
    );
    if (response.statusCode === 401 || response.statusCode === 403) await this.parse(response, timeoutMs);
    if (response.statusCode !== 200) {
      response.resume();
      // An instance that does not serve the stream (shedding, or without its store): the next one is tried next.
      if (response.statusCode === 503) this.moveOn(index);
      throw new CoordinatorUnavailableError(`the event stream answered ${response.statusCode}`, {
        status: response.statusCode,
      });
    }
    return response;
  }

  private json<T>(method: string, path: string, body: unknown, timeouts: AskTimeouts, repeatable: boolean): Promise<T> {
    return this.ask<T>(method, path, body, timeouts, repeatable, (response, left) => this.parse<T>(response, left));
  }

  /**
   * One call: its first exchange, and the re-asks {@link ReAsks} allows while time is left, each on
   * the next base URL. `read` turns an exchange's response into the answer (or throws), within the
   * ms it is given. Fails with the failure that says most about the coordinator.
   */
  private async ask<T>(
    method: string,
    path: string,
    body: unknown,
    { timeoutMs, reAskWithinMs = timeoutMs }: AskTimeouts,
    repeatable: boolean,
    read: (response: IncomingMessage, timeLeftMs: number) => Promise<T>,
    extraHeaders: Record<string, string> = {},
  ): Promise<T> {
    const sentAt = Date.now();
    const endsAt = sentAt + timeoutMs;
    const reAsks = new ReAsks(this.baseUrls.length, repeatable);
    let index = this.current;
    for (;;) {
      try {
        const response = await this.request(index, method, path, body, endsAt - Date.now(), extraHeaders);
        return await read(response, Math.max(1, endsAt - Date.now()));
      } catch (error) {
        if (isConfigError(error)) throw error;
        const failure = asUnavailable(error);
        if (unanswered(failure)) this.moveOn(index);
        const now = Date.now();
        // A client that closed (and cut this exchange off) asks nothing again.
        const timeLeft = !this.options.agents.destroyed && now - sentAt < reAskWithinMs && endsAt - now >= 1;
        const next = reAsks.next(index, failure, timeLeft);
        if (next === undefined) throw reAsks.error ?? failure;
        index = next;
      }
    }
  }

  /** Reads an answer: a 2xx one's JSON body (nothing when `expectEmpty`), else a ConfigError (401, 403) or a CoordinatorUnavailableError. */
  private async parse<T>(response: IncomingMessage, timeoutMs: number, expectEmpty = false): Promise<T> {
    const timer = timeoutAfterPendingReads(timeoutMs, () => response.destroy(timeoutError(timeoutMs)));
    try {
      const text = (await readBody(response)).toString('utf8');
      const status = response.statusCode ?? 0;
      if (status === 401 || status === 403) throw refusal(status, text);
      if (status < 200 || status >= 300) {
        throw new CoordinatorUnavailableError(`the coordinator answered ${status}: ${text.slice(0, 200)}`, {
          status,
          code: errorCode(text),
          retryAfterMs: retryAfterMs(header(response, 'retry-after')),
        });
      }
      return (expectEmpty ? undefined : JSON.parse(text)) as T;
    } catch (error) {
      throw isConfigError(error) ? error : asUnavailable(error);
    } finally {
      timer.cancel();
    }
  }

  /** Sends one request to the `index`th base URL; `timeoutMs` bounds the time to the response head. */
  private async request(
    index: number,
    method: string,
    path: string,
    body: unknown,
    timeoutMs: number,
    extraHeaders: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    const url = new URL(`v1/${this.options.namespace}/${path}`, this.baseUrls[index]);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { ...extraHeaders };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const waitMs = Math.max(1, timeoutMs);
    try {
      return await send(url, {
        method,
        headers,
        body: payload,
        signal,
        headTimeoutMs: waitMs,
        connectTimeoutMs: Math.min(this.options.connectTimeoutMs, waitMs),
        agents: this.options.agents,
        resendOnStaleConnection: true,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      // Not answering at all: the next call tries the next coordinator.
      this.moveOn(index);
      throw asUnavailable(error instanceof HeadTimeoutError ? timeoutError(waitMs) : error);
    }
  }

  /** The `index`th coordinator did not answer: the next call goes to the next one (unless another failure moved on already). */
  private moveOn(index: number): void {
    if (this.current === index) this.current = (index + 1) % this.baseUrls.length;
  }
}

/** The API error code of an error body, if it has one. */
function errorCode(text: string): string | undefined {
  const code = errorField(text, 'code');
  return typeof code === 'string' ? code : undefined;
}

/** One field of a JSON error body; undefined when the body is not JSON. */
function errorField(text: string, name: 'code' | 'message'): unknown {
  try {
    return (JSON.parse(text) as Record<string, unknown> | null)?.[name];
  } catch {
    return undefined;
  }
}

/** The coordinator refused the token: its status, code and own message. */
function refusal(status: number, text: string): ConfigError {
  const message = errorField(text, 'message');
  return new ConfigError(
    status,
    errorCode(text) ?? (status === 401 ? 'unauthorized' : 'forbidden'),
    typeof message === 'string' ? message : text.slice(0, 200) || 'no message',
  );
}

/** A `Retry-After` of whole seconds, in ms. */
function retryAfterMs(value: string | undefined): number | undefined {
  const seconds = Number(value);
  return value !== undefined && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

function header(response: IncomingMessage, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function timeoutError(timeoutMs: number): CoordinatorUnavailableError {
  return new CoordinatorUnavailableError(`the coordinator did not answer within ${timeoutMs} ms`);
}

function asUnavailable(error: unknown): CoordinatorUnavailableError {
  if (error instanceof CoordinatorUnavailableError) return error;
  return new CoordinatorUnavailableError(
    `the coordinator is unreachable: ${(error as Error)?.message ?? String(error)}`,
    { cause: error },
  );
}
