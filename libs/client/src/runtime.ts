import type { Clock, RandomSource } from '@sluice/core';
import type { AdmitReason, BreakerState, RetryRequest } from '@sluice/protocol';
import type { CoordinatorLink } from './fleet/coordinator-link';
import type { FleetDependency } from './fleet/fleet-dependency';
import type { LeaseKeeper } from './fleet/leases';
import type { RetryVerdict } from './fleet/local-guard';
import type { TimeoutWatch } from './timeout-watch';
import type { FallbackMode } from './options';
import type { Agents } from './transport/http';

/** The coordinator's answer to "may this call go out?" (a half-open breaker's probe, a rate or concurrency limit). */
export interface AdmitVerdict {
  allow: boolean;
  reason: AdmitReason;
  state: BreakerState;
  /** When a refused call may try again, in ms. */
  retryAfterMs: number;
  /** Present when this call is the fleet's probe. */
  probeToken?: string;
  /** Present when the policy has a concurrency limit: held until the attempt settles. */
  lease?: { id: string; expiresAt: number };
  /** When it was asked (real time, epoch ms): a lease is renewed half a lease after. */
  askedAt: number;
}

/** What a dependency's policy needs from the client that made it. */
export interface SluiceRuntime {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly link: CoordinatorLink;
  readonly agents: Agents;
  /** The attempts' timeouts. */
  readonly timeouts: TimeoutWatch;
  /** The fleet's concurrency leases: renewed on the attempts' timer, released when they settle. */
  readonly leases: LeaseKeeper;
  /** What decides while the coordinator cannot answer. */
  readonly fallbackMode: FallbackMode;
  /** One retry decision: the coordinator's, or the local fallback's when it cannot answer. */
  decideRetry(dependency: FleetDependency, request: RetryRequest): Promise<RetryVerdict>;
  /** The coordinator's admission of a call (half-open, or limited); undefined when it cannot answer. */
  admit(dependency: FleetDependency, cost: number): Promise<AdmitVerdict | undefined>;
  /** Waits for a dependency's first view while it is under way: at most `maxWaitMs` and the read's timeout. */
  firstView(dependency: FleetDependency, maxWaitMs: number): Promise<void>;
  /** A call to a limited dependency goes out unchecked (the `fail-open` fallback): said once per outage. */
  limitsUnchecked(dependency: FleetDependency): void;
  /** The breaker state that governs calls: the fleet's, or the fallback's while the coordinator is away. */
  breakerState(dependency: FleetDependency, now: number): BreakerState;
  /** Lets one local probe out of a half-open local breaker, while it governs (fallback `local` only). */
  tryLocalProbe(dependency: FleetDependency, now: number): boolean;
  /** True while the local fallback breaker governs calls. */
  governedLocally(): boolean;
  /** Sends a probe's outcome at once. */
  reportProbe(dependency: FleetDependency, token: string, success: boolean): void;
}
