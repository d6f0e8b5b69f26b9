/** One idempotency key of one namespace. */
export interface IdempotencyRef {
  namespace: string;
  key: string;
}

export interface IdempotencyClaim {
  fingerprint: string;
  /** The fencing token the claim gets if it wins: random, made by the caller. */
  token: string;
  /**
   * Caller-chosen id of this claim, kept in the key's record: a claim again with it (and the same
   * fingerprint) while the lease runs answers `resumed` with the token it won, changing nothing.
   */
  claimId?: string;
  leaseMs: number;
  /** How long a completed key is kept after its completion. */
  retentionMs: number;
}

/**
 * What a claim found. `durable` (on the claims the caller holds): the key's completion will be
 * acknowledged only once a replica holds it as well (see IdempotencyCompletionOutcome). `claimed`: the key was new; `recovered`: an in-flight key whose lease had
 * expired was taken over (with the new token); `resumed`: a repeat of the holder's own claim (same
 * `claimId`) while its lease runs, answered with the token, lease and `recovered` of that claim;
 * `completed`: the stored response (JSON text); `in_flight`: another holder's lease runs
 * `leaseRemainingMs` more; `mismatch`: the key was used with another fingerprint.
 */
export type IdempotencyClaimOutcome =
  | { outcome: 'claimed' | 'recovered'; leaseExpiresAt: number; durable: boolean }
  | { outcome: 'resumed'; token: string; leaseExpiresAt: number; recovered: boolean; durable: boolean }
  | { outcome: 'completed'; response: string }
  | { outcome: 'in_flight'; leaseRemainingMs: number }
  | { outcome: 'mismatch' };

export interface IdempotencyCompletion {
  token: string;
  /** The response to replay, as opaque text. */
  response: string;
}

/**
 * `completed`: stored (the store does not wait for a replica on this key); `replicated`: stored,
 * and a replica acknowledged it; `not_replicated`: stored on the primary, but the store waits for a
 * replica on this key and none acknowledged it within the store timeout (completing again with the
 * same token waits again); `lease_lost`: the token is not (or no longer) the key's current one.
 */
export type IdempotencyCompletionOutcome = 'completed' | 'replicated' | 'not_replicated' | 'lease_lost';

/** `absent`: nothing to release (the key is unknown or expired). */
export type IdempotencyReleaseOutcome = 'released' | 'absent' | 'lease_lost';

export interface IdempotencyRecord {
  state: 'in_flight' | 'completed';
  createdAt: number;
  expiresAt: number;
  leaseExpiresAt?: number;
  completedAt?: number;
}

/** Idempotency keys: claimed under a fenced lease, completed with a response to replay, or released. */
export interface IdempotencyStore {
  /** Claims an idempotency key, or tells why not: completed, in flight or another fingerprint. */
  claimIdempotencyKey(ref: IdempotencyRef, claim: IdempotencyClaim): Promise<IdempotencyClaimOutcome>;

  /**
   * Stores the response of a claimed key; only its current token may. Kept `retentionMs` from now.
   * A response past MAX_STORED_RESPONSE_BYTES is refused with StoredResponseTooLargeError, storing nothing.
   */
  completeIdempotencyKey(ref: IdempotencyRef, completion: IdempotencyCompletion): Promise<IdempotencyCompletionOutcome>;

  /** Forgets an in-flight key whose work did not happen; only its current token may. */
  releaseIdempotencyKey(ref: IdempotencyRef, token: string): Promise<IdempotencyReleaseOutcome>;

  /** The key's state and times, or null when unknown. */
  readIdempotencyKey(ref: IdempotencyRef): Promise<IdempotencyRecord | null>;
}
