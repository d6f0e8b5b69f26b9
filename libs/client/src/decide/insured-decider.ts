import type { Clock } from '@sluice/core';
import type { BreakerState, RetryRequest } from '@sluice/protocol';
import type { BreakerFacts } from '../errors';
import type { CoordinatorLink } from '../fleet/coordinator-link';
import type { FleetDependency } from '../fleet/fleet-dependency';
import type { AdmitAnswer, Decider, RetryVerdict } from './decider';
import type { LocalDecider } from './local-decider';

/**
 * The fleet decides, insured by the local fallback (as rate-limiter-flexible's insured limiter
 * switches to its insurance limiter in one place): while the coordinator is away (the link says
 * so) the fallback decides everything, and a decision the coordinator did not answer in time is
 * the fallback's too. This is the only place that chooses between them.
 */
export class InsuredDecider implements Omit<Decider, 'admit'> {
  constructor(
    /** The coordinator's decisions ({@link FleetDecider}). */
    private readonly fleet: Decider,
    private readonly insurance: LocalDecider,
    private readonly link: CoordinatorLink,
    private readonly clock: Clock,
  ) {}

  /** True while the local breaker governs calls (the fallback decides, in `local` mode). */
  get governedLocally(): boolean {
    return this.insurance.governs;
  }

  breakerState(dependency: FleetDependency, now: number): BreakerState {
    return this.decider().breakerState(dependency, now);
  }

  breakerFacts(dependency: FleetDependency, now: number): BreakerFacts {
    return this.decider().breakerFacts(dependency, now);
  }

  /**
   * The fleet's admission on the breaker that governs now, waited for until the call's deadline at
   * most; the fallback's, on the breaker that governs once the fleet did not answer.
   */
  async admit(dependency: FleetDependency, cost: number, deadlineAt?: number): Promise<AdmitAnswer> {
    const answer = this.link.fallback
      ? undefined
      : await this.fleet.admit(dependency, cost, this.breakerNow(dependency), deadlineAt);
    return answer ?? this.insurance.admit(dependency, cost, this.breakerNow(dependency));
  }

  async retry(dependency: FleetDependency, request: RetryRequest): Promise<RetryVerdict> {
    const verdict = this.link.fallback ? undefined : await this.fleet.retry(dependency, request);
    return verdict ?? this.insurance.retry(dependency, request);
  }

  private decider(): Decider {
    return this.link.fallback ? this.insurance : this.fleet;
  }

  private breakerNow(dependency: FleetDependency): BreakerState {
    return this.breakerState(dependency, this.clock.now());
  }
}
