import type { RateLimitPolicy } from '@sluice/protocol';
import type { DependencyRef } from './common';

/** One key of a named rate limit. */
export interface RateLimitRef {
  namespace: string;
  limit: string;
  key: string;
}

export interface RateLimitOutcome {
  allow: boolean;
  /** The burst. */
  limit: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
}

export interface LeaseOutcome {
  /** The lease's new expiry; null for an unknown or expired lease. */
  expiresAt: number | null;
  leasesInUse: number;
}

/** Named rate limits, and the concurrency leases admit() hands out. */
export interface LimitStore {
  /**
   * Takes `cost` from one key of a named rate limit. With a caller-chosen `requestId`, a granted
   * take is kept (takeOutcomeTtlMs: at least 60 s, at least the limit's period) and a repeat
   * answers it without taking again; a denial is not kept.
   */
  takeRateLimit(
    ref: RateLimitRef,
    policy: RateLimitPolicy,
    cost: number,
    requestId?: string,
  ): Promise<RateLimitOutcome>;

  /** Releases a concurrency lease; released is false for an unknown or expired lease. */
  releaseLease(ref: DependencyRef, leaseId: string): Promise<{ released: boolean; leasesInUse: number }>;

  /** Extends a live concurrency lease by `leaseMs` from now. */
  renewLease(ref: DependencyRef, leaseId: string, leaseMs: number): Promise<LeaseOutcome>;
}
