import { MAX_STORED_RESPONSE_BYTES, type StoredResponse } from '@sluice/protocol';

/** Body bytes plus header names and values: what the size limit counts. */
export function storedResponseBytes(response: StoredResponse): number {
  let bytes = Buffer.byteLength(response.body, response.bodyEncoding === 'base64' ? 'base64' : 'utf8');
  for (const [name, value] of Object.entries(response.headers)) {
    bytes += name.length;
    for (const item of Array.isArray(value) ? value : [value]) bytes += Buffer.byteLength(item);
  }
  return bytes;
}

/** A completion's response is past MAX_STORED_RESPONSE_BYTES: the caller's error, nothing was stored. */
export class StoredResponseTooLargeError extends Error {
  readonly storedResponseTooLarge = true;

  constructor(readonly bytes: number) {
    super(`the stored response is ${bytes} bytes, more than ${MAX_STORED_RESPONSE_BYTES}`);
    this.name = 'StoredResponseTooLargeError';
  }
}

/**
 * Refuses a response to store past MAX_STORED_RESPONSE_BYTES, in every Store: the JSON of a
 * StoredResponse counts its body and headers (as the API does), any other text its bytes.
 */
export function assertStorableResponse(response: string): void {
  const bytes = textResponseBytes(response);
  if (bytes > MAX_STORED_RESPONSE_BYTES) throw new StoredResponseTooLargeError(bytes);
}

function textResponseBytes(response: string): number {
  const bytes = Buffer.byteLength(response);
  if (bytes <= MAX_STORED_RESPONSE_BYTES) return bytes;
  try {
    const parsed: unknown = JSON.parse(response);
    return isStoredResponse(parsed) ? storedResponseBytes(parsed) : bytes;
  } catch {
    return bytes;
  }
}

function isStoredResponse(value: unknown): value is StoredResponse {
  if (typeof value !== 'object' || value === null) return false;
  const { body, headers } = value as Partial<StoredResponse>;
  return typeof body === 'string' && typeof headers === 'object' && headers !== null;
}
