/**
 * How long the first outcome of a call with a caller-chosen id (`requestId`) is kept, so that a
 * caller who got no answer (a timeout, a 503) and asks again with the same id gets that outcome
 * instead of a second change. It is kept "for as long as a caller could ask again": at least
 * {@link MIN_REQUEST_OUTCOME_TTL_MS}, and at least the life of what the outcome handed out.
 *
 * Only outcomes that changed state are kept (a granted retry, a granted admission, a granted
 * take): a denial changed nothing, so deciding a repeat of it again is honest, and a flood of
 * denials under overload, the bulk of the traffic then, costs no memory. Both stores (the Lua
 * scripts and MemoryStore) use these lifetimes.
 */

/** A caller asks again within seconds of a timeout; a minute covers its retries with backoff. */
export const MIN_REQUEST_OUTCOME_TTL_MS = 60_000;

/** A granted retry: at least as long as it counts in the budget window. */
export function retryOutcomeTtlMs(windowSeconds: number): number {
  return Math.max(MIN_REQUEST_OUTCOME_TTL_MS, Math.ceil(windowSeconds * 1000));
}

/** A granted admission: at least the life of its concurrency lease and of its probe lease. */
export function admitOutcomeTtlMs(leaseMs: number, probeLeaseMs: number): number {
  return Math.max(MIN_REQUEST_OUTCOME_TTL_MS, Math.ceil(leaseMs), Math.ceil(probeLeaseMs));
}

/** A granted take of a named rate limit: at least the limit's period (a repeat "within the limit's period" answers the first take). */
export function takeOutcomeTtlMs(periodMs: number): number {
  return Math.max(MIN_REQUEST_OUTCOME_TTL_MS, Math.ceil(periodMs));
}
