import { gcraCharge, gcraTake, type GcraCell } from '@sluice/core';
import type { DependencyPolicy, RateLimitPolicy } from '@sluice/protocol';
import type { LimitReason } from '../errors';

/**
 * A local admission: admitted (holding a concurrency slot when the policy has a concurrency limit,
 * to be given back with {@link LocalLimits.release}), or refused with the reason and when the
 * limit expects to admit the call (ms).
 */
export type LocalAdmission =
  { allow: true; slot: boolean } | { allow: false; reason: LimitReason; retryAfterMs: number };

/**
 * A dependency's rate and concurrency limits kept by this process alone, for the `local` fallback:
 * a GCRA cell (libs/core `gcraTake`) and a count of attempts in flight. The fleet's limits are
 * fleet-wide, so this process keeps its share (see `FleetDependency.share`) of them: the rate and burst, and
 * the concurrency limit, scaled (never below 1).
 *
 * It is fed while the coordinator decides too, so it is warm when the coordinator goes away: the
 * fleet's grants are charged to the cell (at most one full burst deep) and leased attempts are
 * counted in flight. The other way round, attempts admitted here hold no fleet lease, so once the
 * coordinator answers again it undercounts this process until they end: meanwhile the local count
 * is checked before the fleet is asked ({@link whileUnleased}).
 */
export class LocalLimits {
  /** The GCRA cell's theoretical arrival time; null when never taken. */
  private tat: GcraCell | null = null;
  /** Attempts of this process holding a concurrency slot now (leased by the fleet, or admitted here). */
  inFlight = 0;
  /** Of those, the ones admitted here: the fleet does not know them. */
  unleased = 0;

  constructor(
    private readonly policy: () => DependencyPolicy,
    private readonly share: () => number,
  ) {}

  /**
   * Admits one attempt on local counts, taking its cost and a slot. In `shadow` mode nothing is
   * refused, as the fleet would not refuse either.
   */
  admit(now: number, cost: number): LocalAdmission {
    const { rateLimit, concurrency, mode } = this.policy();
    const full = this.full();
    if (full) return full;
    if (rateLimit) {
      const scaled = this.scaled(rateLimit);
      const decision = gcraTake(scaled, this.tat, now, Math.min(cost, scaled.burst));
      if (decision.allow) this.tat = decision.tat;
      else if (mode !== 'shadow') return { allow: false, reason: 'rate_limited', retryAfterMs: decision.retryAfterMs };
    }
    if (!concurrency) return { allow: true, slot: false };
    this.inFlight++;
    this.unleased++;
    return { allow: true, slot: true };
  }

  /**
   * Before the fleet is asked: while attempts admitted here (with no fleet lease) are in flight,
   * the refusal of a full local count; undefined otherwise.
   */
  whileUnleased(): Extract<LocalAdmission, { allow: false }> | undefined {
    return this.unleased > 0 ? this.full() : undefined;
  }

  /**
   * The fleet admitted an attempt: charged here too (at most a full burst deep), and its slot
   * counted; true when it holds a slot, to be given back with {@link release}.
   */
  granted(now: number, cost: number): boolean {
    const { rateLimit, concurrency } = this.policy();
    if (rateLimit) {
      const scaled = this.scaled(rateLimit);
      this.tat = gcraCharge(scaled, this.tat, now, Math.min(cost, scaled.burst));
    }
    if (!concurrency) return false;
    this.inFlight++;
    return true;
  }

  /** An attempt that held a slot settled; `unleased` when it was admitted here. */
  release(unleased: boolean): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (unleased) this.unleased = Math.max(0, this.unleased - 1);
  }

  /** The refusal of a full concurrency count (never in `shadow` mode). */
  private full(): Extract<LocalAdmission, { allow: false }> | undefined {
    const { concurrency, mode } = this.policy();
    if (!concurrency || mode === 'shadow') return undefined;
    if (this.inFlight < Math.max(1, Math.floor(concurrency.limit * this.share()))) return undefined;
    // The fleet would name its earliest lease expiry; here the lease duration bounds it.
    return { allow: false, reason: 'concurrency_limited', retryAfterMs: concurrency.leaseMs };
  }

  private scaled(limit: RateLimitPolicy): RateLimitPolicy {
    const share = this.share();
    if (share === 1) return limit;
    return {
      rate: limit.rate * share,
      periodMs: limit.periodMs,
      burst: Math.max(1, Math.floor(limit.burst * share)),
    };
  }
}
