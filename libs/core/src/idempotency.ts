/**
 * The life of an idempotency key, as pure functions over its record: claim, complete, release.
 * The Lua twins are libs/store/src/redis/lua/*_idempotency_key-1.lua; the store conformance suite
 * keeps them equal.
 *
 * A claim on a new key holds it in flight under a lease, fenced by the claimant's token. A claim
 * on a completed key gets its response; on an in-flight key, the time its lease has left; with
 * another fingerprint, a mismatch. An in-flight key whose lease has expired is taken over by the
 * next claim (`recovered`) and the old token is fenced off. The record lives `max(lease,
 * retention)` from a claim and `retention` from its completion.
 *
 * A claim may carry a caller-chosen `claimId`, kept in the record: a claim again with the same
 * claim id and fingerprint while the lease runs is the holder's own repeat (its answer was lost)
 * and is `resumed`: it gets the record's token, and nothing changes.
 *
 * A lease never runs past now + the leaseMs it was granted with: one left further ahead by a
 * clock step back is cut to that (the verdict's entry is then the record to keep).
 */
export interface IdempotencyEntry {
  state: 'in_flight' | 'completed';
  fingerprint: string;
  token: string;
  createdAt: number;
  leaseExpiresAt: number;
  /** The lease's length as granted: a lease never runs past now + leaseMs (absent on older records). */
  leaseMs?: number;
  retentionMs: number;
  completedAt?: number;
  response?: string;
  /** When the record is forgotten. */
  expiresAt: number;
  /** The caller-chosen id of the claim that holds the record, when it gave one. */
  claimId?: string;
  /** Whether the claim that holds the record took it over from an expired lease. */
  recovered?: boolean;
}

export interface IdempotencyClaimInput {
  fingerprint: string;
  token: string;
  leaseMs: number;
  retentionMs: number;
  claimId?: string;
}

export type IdempotencyClaimVerdict =
  | { verdict: 'claimed' | 'recovered'; entry: IdempotencyEntry }
  | { verdict: 'resumed'; entry: IdempotencyEntry }
  | { verdict: 'completed'; entry: IdempotencyEntry }
  | { verdict: 'in_flight'; entry: IdempotencyEntry; leaseRemainingMs: number }
  | { verdict: 'mismatch'; entry: IdempotencyEntry };

/** `entry` is the live record (undefined when unknown or expired); the verdict carries the record to keep. */
export function claimIdempotencyEntry(
  entry: IdempotencyEntry | undefined,
  claim: IdempotencyClaimInput,
  now: number,
): IdempotencyClaimVerdict {
  const held = (createdAt: number, recovered: boolean): IdempotencyEntry => ({
    state: 'in_flight',
    fingerprint: claim.fingerprint,
    token: claim.token,
    createdAt,
    leaseExpiresAt: now + claim.leaseMs,
    leaseMs: claim.leaseMs,
    retentionMs: claim.retentionMs,
    expiresAt: now + Math.max(claim.leaseMs, claim.retentionMs),
    ...(claim.claimId !== undefined ? { claimId: claim.claimId } : {}),
    recovered,
  });
  if (!entry) return { verdict: 'claimed', entry: held(now, false) };
  if (entry.fingerprint !== claim.fingerprint) return { verdict: 'mismatch', entry };
  if (entry.state === 'completed') return { verdict: 'completed', entry };
  // A lease left further ahead than its length by a clock step back ends now + its length.
  const latest = now + (entry.leaseMs ?? claim.leaseMs);
  if (entry.leaseExpiresAt > latest) entry = { ...entry, leaseExpiresAt: latest };
  if (entry.leaseExpiresAt > now) {
    if (claim.claimId !== undefined && entry.claimId === claim.claimId) return { verdict: 'resumed', entry };
    return { verdict: 'in_flight', entry, leaseRemainingMs: entry.leaseExpiresAt - now };
  }
  return { verdict: 'recovered', entry: held(entry.createdAt, true) };
}

/**
 * The record after `token` completes it, or undefined when the token is not the current one
 * (lease lost). Completing again with the same token keeps the first response.
 */
export function completeIdempotencyEntry(
  entry: IdempotencyEntry | undefined,
  token: string,
  response: string,
  now: number,
): IdempotencyEntry | undefined {
  if (!entry || entry.token !== token) return undefined;
  if (entry.state === 'completed') return entry;
  return { ...entry, state: 'completed', response, completedAt: now, expiresAt: now + entry.retentionMs };
}

/** Whether `token` may release the record: only its holder, and only while in flight. */
export function releaseIdempotencyEntry(
  entry: IdempotencyEntry | undefined,
  token: string,
): 'released' | 'absent' | 'lease_lost' {
  if (!entry) return 'absent';
  return entry.state === 'in_flight' && entry.token === token ? 'released' : 'lease_lost';
}
