import type { ErrorBody } from '@sluice/protocol';
import { CliError } from './cli-error';

/** Where the coordinator is and the token to show it. */
export interface Connection {
  url: string;
  token?: string;
}

export interface ApiRequest {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Statuses the caller handles itself (e.g. 412), returned instead of thrown. */
  accept?: number[];
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** A thin client of the coordinator's HTTP API on Node's fetch: one request, its JSON answer, or a CliError. */
export class AdminClient {
  constructor(readonly connection: Connection) {}

  /** The request's URL: the base URL, the path, the query's defined values. */
  urlOf(path: string, query: ApiRequest['query'] = {}): URL {
    const url = new URL(path, this.connection.url.endsWith('/') ? this.connection.url : `${this.connection.url}/`);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  /** The Authorization header, when there is a token. */
  authorization(): Record<string, string> {
    return this.connection.token ? { authorization: `Bearer ${this.connection.token}` } : {};
  }

  async request<T>(method: string, path: string, request: ApiRequest = {}): Promise<ApiResponse<T>> {
    const response = await this.fetch(this.urlOf(path.replace(/^\//, ''), request.query), {
      method,
      headers: {
        ...this.authorization(),
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...request.headers,
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
    const text = await response.text();
    if (text !== '' && !isJson(response)) throw this.notSluice(method, path, response);
    const body = text === '' ? undefined : parseJson(text);
    if (response.ok || request.accept?.includes(response.status)) {
      return { status: response.status, headers: response.headers, body: body as T };
    }
    throw refusal(method, path, response, body as Partial<ErrorBody> | undefined, this.connection);
  }

  /** Every answer of the coordinator's API is JSON: anything else came from another server. */
  private notSluice(method: string, path: string, response: Response): CliError {
    const type = response.headers.get('content-type') ?? 'no content-type';
    return new CliError(
      `${method} ${path}: the server at ${this.connection.url} answered ${response.status} with ${type}, ` +
        "not the coordinator's JSON: is --url (SLUICE_URL) a Sluice coordinator's base URL?",
    );
  }

  get<T>(path: string, query?: ApiRequest['query']): Promise<T> {
    return this.request<T>('GET', path, { query }).then((response) => response.body);
  }

  /** fetch, with an unreachable coordinator said plainly. */
  async fetch(url: URL, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        `cannot reach the coordinator at ${this.connection.url} (${cause?.code ?? cause?.message ?? (error as Error).message}); ` +
          'set --url or SLUICE_URL',
      );
    }
  }
}

function isJson(response: Response): boolean {
  return /^application\/(problem\+)?json\b/i.test(response.headers.get('content-type') ?? '');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The coordinator's refusal as an operator reads it: what was refused, why, and what to do about it. */
export function refusal(
  method: string,
  path: string,
  response: Response,
  body: Partial<ErrorBody> | undefined,
  connection: Connection,
): CliError {
  const code = body?.code ?? `http_${response.status}`;
  const said = `${response.status} ${code}${body?.message ? `: ${body.message}` : ''}`;
  const details = (body?.details ?? []).map((detail) => `\n  ${detail.field}: ${detail.message}`).join('');
  const hint = HINTS[code]?.(response, connection) ?? '';
  return new CliError(`${method} ${path} was refused (${said})${details}${hint ? `\n${hint}` : ''}`);
}

const HINTS: Record<string, (response: Response, connection: Connection) => string> = {
  unauthorized: (_response, { token }) =>
    token
      ? 'The coordinator does not know this token: pass an admin token with --token or SLUICE_TOKEN.'
      : 'No token was given: pass an admin token with --token or SLUICE_TOKEN.',
  not_found: (_response, { url }) =>
    new URL(url).pathname.replace(/\/+$/, '') === ''
      ? ''
      : `--url should be the coordinator's base URL without a path (e.g. ${new URL(url).origin}), not ${url}.`,
  forbidden: () => 'This token may not do that: the admin API needs an admin token whose namespaces cover the request.',
  store_unavailable: (response) =>
    `The coordinator's store (Redis) is not answering, so nothing was read or changed; try again${retryAfter(response)}.`,
  overloaded: (response) =>
    `This coordinator instance is overloaded and did nothing; try again${retryAfter(response)}.`,
};

const retryAfter = (response: Response) => {
  const seconds = response.headers.get('retry-after');
  return seconds ? ` in ${seconds} s` : ' shortly';
};
