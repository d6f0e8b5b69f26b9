// Every call of the console to the coordinator: the admin token attached, errors as ApiError
// (status, code, the fields at fault), and what each answer says about health reported.

import { authHeaders } from './session.js';
import { noteAnswer, noteUnreachable } from './health.js';

/** An answer of 400 or more, with the API's error body. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {Partial<import('@sluice/protocol').ErrorBody> | null} body
   * @param {Headers} headers
   */
  constructor(status, body, headers) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? 'http_error';
    this.details = Array.isArray(body?.details) ? body.details : [];
    this.body = body;
    this.headers = headers;
  }
}

/** The coordinator did not answer (network error, instance down). */
export class UnreachableError extends Error {}

const listeners = new Set();

/** Called with every ApiError (the app signs the operator out on a 401). */
export function onApiError(listener) {
  listeners.add(listener);
}

/** `segments` are encoded one by one: `path('admin', 'v1', ns, 'breakers')` → `../admin/v1/shop/breakers`. */
export function path(...segments) {
  return `../${segments.map((segment) => encodeURIComponent(segment)).join('/')}`;
}

/**
 * @typedef {object} RequestOptions
 * @property {unknown} [body] sent as JSON
 * @property {Record<string, string>} [headers]
 * @property {AbortSignal} [signal]
 */

/**
 * One request. Resolves `{ status, body, headers }` for 2xx and 304; rejects with ApiError or
 * UnreachableError otherwise.
 * @param {string} method
 * @param {string} url
 * @param {RequestOptions} [options]
 * @returns {Promise<{ status: number, body: any, headers: Headers }>}
 */
export async function request(method, url, { body, headers = {}, signal } = {}) {
  let response;
  try {
    response = await fetch(url, {
      method,
      signal,
      cache: 'no-store',
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...authHeaders(),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    noteUnreachable(error);
    throw new UnreachableError('the coordinator does not answer');
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { message: text };
  }
  noteAnswer(response.status, parsed?.code);
  if (response.status >= 400) {
    const error = new ApiError(response.status, parsed, response.headers);
    for (const listener of listeners) listener(error);
    throw error;
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** @type {(url: string, options?: RequestOptions) => Promise<any>} */
export const get = (url, options) => request('GET', url, options).then((answer) => answer.body);
/** @type {(url: string, body?: unknown, options?: RequestOptions) => Promise<any>} */
export const post = (url, body, options) => request('POST', url, { ...options, body }).then((answer) => answer.body);

/** A sentence for an operator: what failed and what to do. */
export function describeError(error) {
  if (error instanceof UnreachableError) return 'The coordinator does not answer. Is it running?';
  if (!(error instanceof ApiError)) return String(error?.message ?? error);
  if (error.status === 401) return 'The coordinator refused the token (401 unauthorized). Enter a valid admin token.';
  if (error.status === 403) {
    return `This token may not do that (403 forbidden): ${error.message}. An admin token covering the namespace is needed.`;
  }
  const fields = error.details.map((detail) => `${detail.field}: ${detail.message}`).join('; ');
  return `${error.status} ${error.code}: ${error.message}${fields && !error.message.includes(fields) ? ` (${fields})` : ''}`;
}
