/** POST /v1/{ns}/deps/{dep}/admit */
import type { BreakerSummary } from './retry';

export interface AdmitRequest {
  cost?: number;
  requestId?: string;
}

export const ADMIT_REASONS = ['granted', 'breaker_open', 'rate_limited', 'concurrency_limited'] as const;
export type AdmitReason = (typeof ADMIT_REASONS)[number];

export interface AdmitDecision {
  allow: boolean;
  reason: AdmitReason;
  /** When a refused call may try again. */
  retryAfterMs: number;
  breaker: BreakerSummary;
  /** Present when this call is the half-open probe: report its outcome with this token. */
  probe?: ProbeGrant;
  /** Present when the policy has a concurrency limit. */
  lease?: LeaseGrant;
  shadow: boolean;
}

/** The half-open breaker's probe, handed to one caller. */
export interface ProbeGrant {
  token: string;
  expiresAt: number;
}

/** A place under a concurrency limit: release it (DELETE …/leases/{id}) when the call ends. */
export interface LeaseGrant {
  id: string;
  expiresAt: number;
}

/** POST /v1/{ns}/deps/{dep}/leases/{id}/renew */
export interface LeaseRenewal {
  expiresAt: number;
}
