import type { BreakerState, RetryRequest } from '@sluice/protocol';
import type { BreakerFacts, LimitReason } from '../errors';
import type { FleetDependency } from '../fleet/fleet-dependency';
import type { FleetProbe } from '../fleet/kept-probes';
import type { LeaseHold } from '../fleet/leases';

/** The probe of a half-open breaker an attempt runs as: the fleet's (with its token), or the local fallback's. */
export const LOCAL_PROBE = Symbol('local probe');
/** A fleet probe (the coordinator's token), or the local fallback breaker's. */
export type Probe = FleetProbe | typeof LOCAL_PROBE;

/**
 * What an admitted attempt holds until it settles: the fleet's concurrency lease, and a slot of the
 * local count (`leased` alongside a lease, `local` when the fallback admitted it).
 */
export interface Permit {
  lease: LeaseHold | undefined;
  slot: 'leased' | 'local' | undefined;
}

/** An attempt may go out: as the half-open breaker's probe, holding a permit, when either applies. */
export interface Admission {
  allow: true;
  probe: Probe | undefined;
  permit: Permit | undefined;
}

export const NO_ADMISSION: Admission = { allow: true, probe: undefined, permit: undefined };

/** A rate or concurrency limit refused the attempt: it may ask again after `retryAfterMs`. */
export interface LimitRefusal {
  allow: false;
  reason: LimitReason;
  retryAfterMs: number;
}

/** The breaker refused the attempt. */
export interface BreakerRefusal {
  allow: false;
  reason: 'breaker_open';
  breaker: BreakerFacts;
}

/** Nobody may let the attempt out: the coordinator is away and the fallback is `fail-closed`, or it refuses the token. */
export interface NoDecision {
  allow: false;
  reason: 'coordinator_unavailable' | 'config_error';
}

/** The call's deadline passed before the admission was answered. */
export interface DeadlineRefusal {
  allow: false;
  reason: 'deadline_exceeded';
}

/** The answer to "may this attempt go out?" of a half-open breaker or a limited dependency. */
export type AdmitAnswer = Admission | LimitRefusal | BreakerRefusal | NoDecision | DeadlineRefusal;

/** A retry decision as the SDK uses it, whoever made it. */
export interface RetryVerdict {
  allow: boolean;
  reason: string;
  delayMs: number;
  /** What the decision said of the breaker, on a `breaker_open` denial. */
  breaker?: BreakerFacts;
  /** On a fleet's `budget_exhausted` denial: ms until the same ask could be granted, when it said. */
  budgetRetryAfterMs?: number;
}

/** An answer now, or later; `undefined` when this decider could not decide (the coordinator did not answer). */
export type Decided<T> = T | undefined | Promise<T | undefined>;

/**
 * Who decides what a call may do beyond its first attempt through a closed breaker: the fleet (the
 * coordinator, {@link FleetDecider}) or the local fallback ({@link LocalDecider}). The one place
 * that picks between them is {@link InsuredDecider}, which always answers.
 */
export interface Decider {
  /** The breaker state that governs calls now. */
  breakerState(dependency: FleetDependency, now: number): BreakerState;
  /** The breaker as it governs now, with what is known of its reason and end. */
  breakerFacts(dependency: FleetDependency, now: number): BreakerFacts;
  /**
   * Lets an attempt out of a half-open breaker (as its probe) or to a limited dependency, or
   * refuses it; `state` is the breaker state that governs now, `deadlineAt` (on the clock) the
   * call's deadline, after which an answer is not waited for.
   */
  admit(dependency: FleetDependency, cost: number, state: BreakerState, deadlineAt?: number): Decided<AdmitAnswer>;
  /** May the call be retried? */
  retry(dependency: FleetDependency, request: RetryRequest): Decided<RetryVerdict>;
}
