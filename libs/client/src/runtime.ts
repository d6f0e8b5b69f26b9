import type { Clock, RandomSource } from '@sluice/core';
import type { InsuredDecider } from './decide/insured-decider';
import type { FleetDependency } from './fleet/fleet-dependency';
import type { LeaseKeeper } from './fleet/leases';
import type { TimeoutWatch } from './timeout-watch';
import type { Agents } from './transport/http';

/** What a dependency's policy needs from the client that made it. */
export interface SluiceRuntime {
  readonly clock: Clock;
  /** True when `clock` tells real time (epoch ms): the attempts' timeouts then use its readings as they are. */
  readonly realClock: boolean;
  readonly random: RandomSource;
  readonly agents: Agents;
  /** The attempts' timeouts. */
  readonly timeouts: TimeoutWatch;
  /** The fleet's concurrency leases: renewed on the attempts' timer, released when they settle. */
  readonly leases: LeaseKeeper;
  /** Who decides retries and admissions: the fleet, insured by the local fallback. */
  readonly decider: InsuredDecider;
  /** With `verify: true`: waits for the token's verification; rejects with the ConfigError while the token is refused. */
  readonly beforeCall: (() => Promise<void>) | undefined;
  /** Waits for a dependency's first view while it is under way: at most `maxWaitMs` and the read's timeout. */
  firstView(dependency: FleetDependency, maxWaitMs: number): Promise<void>;
  /** Sends a probe's outcome at once. */
  reportProbe(dependency: FleetDependency, token: string, success: boolean): void;
}
