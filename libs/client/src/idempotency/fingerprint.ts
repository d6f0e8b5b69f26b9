import { createHash } from 'node:crypto';

export interface FingerprintInput {
  method: string;
  /** The path and query the request was sent to. */
  url: string;
  /** The parsed body (canonical JSON: key order does not matter), a string, bytes, or nothing. */
  body?: unknown;
  /** Who is calling, when known: the same key from another caller is another request. */
  identity?: string;
}

/**
 * What identifies a request for its idempotency key: a SHA-256 over the method, the path and
 * query, the caller's identity and the body. A key reused with another fingerprint is refused.
 *
 * @example
 * requestFingerprint({ method: 'POST', url: '/orders', body: { sku: 'A-1' }, identity: 'user-7' });
 * // 'sha256:3q2+7w…'
 */
export function requestFingerprint(input: FingerprintInput): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([input.method.toUpperCase(), input.url, input.identity ?? null]));
  hash.update('\n');
  hash.update(bodyBytes(input.body));
  return `sha256:${hash.digest('base64url')}`;
}

function bodyBytes(body: unknown): Uint8Array | string {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  return canonicalJson(body);
}

/** JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
