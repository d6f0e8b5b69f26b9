import type { ErrorDetail, StoredResponse } from '@sluice/protocol';

const MAX_HEADERS = 100;
const MAX_HEADER_VALUES = 100;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
/** A header value must not split the response: no CR, LF or NUL. */
const HEADER_VALUE = /^[^\r\n\0]*$/;
/** Canonical base64 (padding included), so the stored text is the bytes, one way only. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What is wrong with a response to store, field by field (paths under `response.`). */
export function storedResponseProblems(response: StoredResponse): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const entries = Object.entries(response.headers);
  if (entries.length > MAX_HEADERS) {
    problems.push({ field: 'response.headers', message: `must have at most ${MAX_HEADERS} entries` });
  }
  for (const [name, value] of entries) {
    const field = `response.headers.${name}`;
    if (!HEADER_NAME.test(name)) problems.push({ field, message: 'is not a valid header name' });
    const values = Array.isArray(value) ? value : [value];
    if (Array.isArray(value) && (value.length === 0 || value.length > MAX_HEADER_VALUES)) {
      problems.push({ field, message: `must have 1 to ${MAX_HEADER_VALUES} values` });
    }
    if (!values.every((item) => typeof item === 'string' && HEADER_VALUE.test(item))) {
      problems.push({ field, message: 'must be a string (or strings) without CR, LF or NUL' });
    }
  }
  if (response.bodyEncoding === 'base64' && !BASE64.test(response.body)) {
    problems.push({ field: 'response.body', message: 'must be canonical base64' });
  }
  return problems;
}

/** Body bytes plus header names and values: what the size limit counts (the store counts the same). */
export { storedResponseBytes } from '@sluice/store';
