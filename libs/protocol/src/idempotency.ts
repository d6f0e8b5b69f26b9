/** Idempotency keys: /v1/{ns}/idempotency/{key} (docs/api.md, Idempotency keys). */

export const BODY_ENCODINGS = ['utf8', 'base64'] as const;
export type BodyEncoding = (typeof BODY_ENCODINGS)[number];

/** A response as stored and replayed: status, headers and body, byte for byte. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
  bodyEncoding: BodyEncoding;
}

export interface IdempotencyClaimRequest {
  fingerprint: string;
  leaseMs?: number;
  retentionSeconds?: number;
  claimId?: string;
}

/** 201: the caller holds the key and does the work. */
export interface IdempotencyClaimed {
  state: 'claimed';
  /** Fencing token: only it may complete or release the key. */
  token: string;
  /** True when an expired in-flight lease was taken over: the earlier attempt may have partly run. */
  recovered: boolean;
  /** True when this answers a repeat of the caller's own claim (same `claimId`): the same token again. */
  resumed?: boolean;
  leaseExpiresAt: number;
  /**
   * True when the key's completion (PUT) will be acknowledged only once a replica of the store holds
   * it as well (`SLUICE_DURABILITY`), so a store failover cannot lose it; false when a store that
   * loses its data (a restart without persistence, a failover without a replica) forgets it and
   * the key becomes new again.
   */
  durable: boolean;
}

/** 200: the work was done; here is its response. */
export interface IdempotencyCompleted {
  state: 'completed';
  response: StoredResponse;
}

export type IdempotencyClaimResponse = IdempotencyClaimed | IdempotencyCompleted;

/** The body of a 409 `in_flight` answer to a claim. */
export interface IdempotencyInFlightBody {
  statusCode: 409;
  code: 'in_flight';
  message: string;
  state: 'in_flight';
  retryAfterMs: number;
}

export interface IdempotencyCompleteRequest {
  token: string;
  response: StoredResponse;
}

export const IDEMPOTENCY_STATES = ['in_flight', 'completed'] as const;
export type IdempotencyState = (typeof IDEMPOTENCY_STATES)[number];

/** GET /v1/{ns}/idempotency/{key} */
export interface IdempotencyKeyView {
  state: IdempotencyState;
  createdAt: number;
  /** When the key is forgotten and becomes new again. */
  expiresAt: number;
  /** While in flight: when the holder's lease runs out. */
  leaseExpiresAt?: number;
  completedAt?: number;
}

/** Response header of PUT /v1/{ns}/idempotency/{key}: `true` when a replica of the store holds the completion too. */
export const DURABLE_HEADER = 'sluice-durable';

/** Response header set on a replayed response by the SDK's server-side middleware. */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';
