import type { Clock, RandomSource } from '@sluice/core';
import type { BreakerState, RetryRequest } from '@sluice/protocol';
import type { CoordinatorLink } from './fleet/coordinator-link';
import type { FleetDependency } from './fleet/fleet-dependency';
import type { RetryVerdict } from './fleet/local-guard';
import type { TimeoutWatch } from './timeout-watch';
import type { Agents } from './transport/http';

/** The coordinator's answer to "may this call go out?" while a breaker is half-open. */
export interface AdmitVerdict {
  allow: boolean;
  state: BreakerState;
  /** Present when this call is the fleet's probe. */
  probeToken?: string;
}

/** What a dependency's policy needs from the client that made it. */
export interface SluiceRuntime {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly link: CoordinatorLink;
  readonly agents: Agents;
  /** The attempts' timeouts. */
  readonly timeouts: TimeoutWatch;
  /** One retry decision: the coordinator's, or the local fallback's when it cannot answer. */
  decideRetry(dependency: FleetDependency, request: RetryRequest): Promise<RetryVerdict>;
  /** The coordinator's admission of a call while half-open; undefined when it cannot answer. */
  admit(dependency: FleetDependency): Promise<AdmitVerdict | undefined>;
  /** The breaker state that governs calls: the fleet's, or the fallback's while the coordinator is away. */
  breakerState(dependency: FleetDependency, now: number): BreakerState;
  /** Lets one local probe out of a half-open local breaker (fallback `local` only). */
  tryLocalProbe(dependency: FleetDependency, now: number): boolean;
  /** True while the local fallback breaker governs calls. */
  governedLocally(): boolean;
  /** Sends a probe's outcome at once. */
  reportProbe(dependency: FleetDependency, token: string, success: boolean): void;
}
