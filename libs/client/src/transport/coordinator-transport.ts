import type { IncomingMessage } from 'node:http';
import type {
  AdmitDecision,
  DependencyView,
  ReportRequest,
  ReportResponse,
  RetryDecision,
  RetryRequest,
} from '@sluice/protocol';
import { CoordinatorUnavailableError } from '../errors';
import { HeadTimeoutError, readBody, send, type Agents } from './http';

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

/**
 * The SDK's calls to the coordinator. Every failure (no connection, timeout, any non-2xx answer such
 * as 503 `store_unavailable`) is a {@link CoordinatorUnavailableError}; a connection failure moves on
 * to the next base URL for the following call.
 */
export class CoordinatorTransport {
  private current = 0;
  private readonly baseUrls: URL[];

  constructor(private readonly options: CoordinatorTransportOptions) {
    this.baseUrls = options.baseUrls.map((url) => new URL(url.endsWith('/') ? url : `${url}/`));
  }

  /** POST /v1/{ns}/deps/{dep}/retry */
  retry(dep: string, body: RetryRequest, timeoutMs: number): Promise<RetryDecision> {
    return this.json('POST', `deps/${dep}/retry`, body, timeoutMs);
  }

  /** POST /v1/{ns}/deps/{dep}/admit, with the call's cost against a rate limit when it is not 1. */
  admit(dep: string, timeoutMs: number, cost = 1): Promise<AdmitDecision> {
    return this.json('POST', `deps/${dep}/admit`, cost === 1 ? {} : { cost }, timeoutMs);
  }

  /** DELETE /v1/{ns}/deps/{dep}/leases/{id} (204); an unknown or expired lease is a 404. */
  async releaseLease(dep: string, id: string, timeoutMs: number): Promise<void> {
    const path = `deps/${dep}/leases/${encodeURIComponent(id)}`;
    await this.parse<void>(await this.request('DELETE', path, undefined, timeoutMs), timeoutMs, true);
  }

  /** POST /v1/{ns}/deps/{dep}/leases/{id}/renew; an unknown or expired lease is a 404. */
  renewLease(dep: string, id: string, timeoutMs: number): Promise<{ expiresAt: number }> {
    return this.json('POST', `deps/${dep}/leases/${encodeURIComponent(id)}/renew`, undefined, timeoutMs);
  }

  /** POST /v1/{ns}/reports */
  report(body: ReportRequest, timeoutMs: number): Promise<ReportResponse> {
    return this.json('POST', 'reports', body, timeoutMs);
  }

  /** GET /v1/{ns}/deps/{dep} with If-None-Match. */
  async readDependency(dep: string, etag: string | undefined, timeoutMs: number): Promise<ViewRead> {
    const response = await this.request(
      'GET',
      `deps/${dep}`,
      undefined,
      timeoutMs,
      etag ? { 'if-none-match': etag } : {},
    );
    const newEtag = header(response, 'etag') ?? etag;
    if (response.statusCode === 304) {
      response.resume();
      return { etag: newEtag };
    }
    return { view: await this.parse<DependencyView>(response, timeoutMs), etag: newEtag };
  }

  /** GET /v1/{ns}/events?deps=…: resolves with the open stream (status 200) or throws. */
  async openEvents(deps: string[], signal: AbortSignal, timeoutMs: number): Promise<IncomingMessage> {
    const query = `events?deps=${deps.map(encodeURIComponent).join(',')}`;
    const response = await this.request('GET', query, undefined, timeoutMs, { accept: 'text/event-stream' }, signal);
    if (response.statusCode !== 200) {
      response.resume();
      throw new CoordinatorUnavailableError(`the event stream answered ${response.statusCode}`, {
        status: response.statusCode,
      });
    }
    return response;
  }

  private async json<T>(method: string, path: string, body: unknown, timeoutMs: number): Promise<T> {
    return this.parse<T>(await this.request(method, path, body, timeoutMs), timeoutMs);
  }

  /** Reads an answer: a 2xx one's JSON body (nothing when `expectEmpty`), else a CoordinatorUnavailableError. */
  private async parse<T>(response: IncomingMessage, timeoutMs: number, expectEmpty = false): Promise<T> {
    const timer = setTimeout(() => response.destroy(timeoutError(timeoutMs)), timeoutMs);
    try {
      const text = (await readBody(response)).toString('utf8');
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        throw new CoordinatorUnavailableError(`the coordinator answered ${status}: ${text.slice(0, 200)}`, { status });
      }
      return (expectEmpty ? undefined : JSON.parse(text)) as T;
    } catch (error) {
      throw asUnavailable(error);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends one request; `timeoutMs` bounds the time to the response head. */
  private async request(
    method: string,
    path: string,
    body: unknown,
    timeoutMs: number,
    extraHeaders: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    const index = this.current;
    const url = new URL(`v1/${this.options.namespace}/${path}`, this.baseUrls[index]);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { ...extraHeaders };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    try {
      return await send(url, {
        method,
        headers,
        body: payload,
        signal,
        headTimeoutMs: timeoutMs,
        connectTimeoutMs: Math.min(this.options.connectTimeoutMs, timeoutMs),
        agents: this.options.agents,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      // Not answering at all: the next call tries the next coordinator.
      if (this.current === index) this.current = (index + 1) % this.baseUrls.length;
      throw asUnavailable(error instanceof HeadTimeoutError ? timeoutError(timeoutMs) : error);
    }
  }
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
