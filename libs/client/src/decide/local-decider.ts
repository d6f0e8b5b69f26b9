import { backoffDelay, type Clock, type RandomSource } from '@sluice/core';
import type { BreakerState, RetryRequest } from '@sluice/protocol';
import type { BreakerFacts } from '../errors';
import type { CoordinatorLink, SluiceLogger } from '../fleet/coordinator-link';
import type { FleetDependency } from '../fleet/fleet-dependency';
import type { LeaseKeeper } from '../fleet/leases';
import type { FallbackMode } from '../options';
import { LOCAL_PROBE, type AdmitAnswer, type Decider, type Permit, type RetryVerdict } from './decider';
import { LOCAL_PERMIT, releasePermit } from './permits';

const UNAVAILABLE = { allow: false, reason: 'coordinator_unavailable', delayMs: 0 } as const;

/**
 * The local fallback, by its mode:
 * - `local`: the process's own budget, breaker and limits (libs/core), scaled to its share;
 * - `fail-open`: retries with backoff up to `maxAttempts`, no breaker, limits unchecked (said once
 *   per dependency and outage);
 * - `fail-closed`: no retries, and calls to a limited dependency refused.
 */
export class LocalDecider implements Decider {
  /** Limited dependencies already said to go unchecked during this outage (`fail-open`). */
  private readonly unchecked = new Set<string>();

  constructor(
    readonly mode: FallbackMode,
    private readonly link: CoordinatorLink,
    private readonly leases: LeaseKeeper,
    private readonly clock: Clock,
    private readonly random: RandomSource,
    private readonly logger: SluiceLogger,
  ) {
    link.changes.event(({ active }) => {
      if (!active) this.unchecked.clear();
    });
  }

  /** True while the local breaker governs calls: the fallback decides, in `local` mode. */
  get governs(): boolean {
    return this.link.fallback && this.mode === 'local';
  }

  breakerState(dependency: FleetDependency, now: number): BreakerState {
    if (this.mode === 'local') return dependency.local.state(now);
    return this.mode === 'fail-open' ? 'closed' : dependency.fleetState(now);
  }

  breakerFacts(dependency: FleetDependency, now: number): BreakerFacts {
    return this.mode === 'local' ? dependency.local.facts(now) : dependency.breakerFacts(now);
  }

  /**
   * The breaker as given (the one that governs now), and a limited dependency's limits by the mode.
   * A half-open breaker lets a local probe out only while the local breaker governs: while the
   * fleet governs, a probe needs the fleet's token.
   */
  admit(dependency: FleetDependency, cost: number, state: BreakerState): AdmitAnswer {
    const now = this.clock.now();
    if (state === 'open' || state === 'forced_open') {
      return { allow: false, reason: 'breaker_open', breaker: this.factsOf(dependency, now) };
    }
    let permit: Permit | undefined;
    if (dependency.limited) {
      switch (this.mode) {
        case 'local': {
          const local = dependency.localLimits.admit(now, cost);
          if (!local.allow) return local;
          if (local.slot) permit = LOCAL_PERMIT;
          break;
        }
        case 'fail-open':
          this.limitsUnchecked(dependency);
          break;
        case 'fail-closed':
          return { allow: false, reason: 'coordinator_unavailable' };
      }
    }
    if (state !== 'half_open') return { allow: true, probe: undefined, permit };
    if (this.governs && dependency.local.tryProbe(now)) return { allow: true, probe: LOCAL_PROBE, permit };
    if (permit) releasePermit(this.leases, dependency, permit);
    return { allow: false, reason: 'breaker_open', breaker: this.factsOf(dependency, now) };
  }

  retry(dependency: FleetDependency, request: RetryRequest): RetryVerdict {
    const now = this.clock.now();
    switch (this.mode) {
      case 'local': {
        const { allow, reason, delayMs } = dependency.local.decideRetry(request, now, this.random);
        if (allow) dependency.recordOwnRetry(now);
        if (reason !== 'breaker_open') return { allow, reason, delayMs };
        return { allow, reason, delayMs, breaker: dependency.local.facts(now) };
      }
      case 'fail-open': {
        const { attempt, retryAfterMs } = request;
        const delayMs = backoffDelay(dependency.fallbackPolicy.backoff, { attempt, retryAfterMs }, this.random);
        dependency.recordOwnRetry(now);
        return { allow: true, reason: 'granted', delayMs };
      }
      case 'fail-closed':
        return UNAVAILABLE;
    }
  }

  /** The facts of the breaker that refused: the local one while it governs, else the fleet's as last said. */
  private factsOf(dependency: FleetDependency, now: number): BreakerFacts {
    return this.governs ? dependency.local.facts(now) : dependency.breakerFacts(now);
  }

  private limitsUnchecked(dependency: FleetDependency): void {
    if (this.unchecked.has(dependency.name)) return;
    this.unchecked.add(dependency.name);
    this.logger.warn(
      `${dependency.name}: rate and concurrency limits go unchecked while the coordinator is away (fail-open fallback)`,
    );
  }
}
