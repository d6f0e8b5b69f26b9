/** Largest request body: room for a full report batch or a stored idempotent response. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
