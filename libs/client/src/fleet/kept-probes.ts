/**
 * The half-open breaker's probe, granted to this client by the coordinator: its token, until when
 * the coordinator holds it for this client (clock ms), and the half-open period it was asked for in
 * ({@link KeptProbes.period} as the ask went out).
 */
export interface FleetProbe {
  token: string;
  until: number;
  period: number;
}

/**
 * The fleet probes of one dependency that were granted but not sent: in admission answers that came
 * after their caller stopped waiting, or to calls that ended before they could send them. Each is
 * still the fleet's probe (the coordinator lets no other out until its outcome or its expiry), so
 * the next attempt that would ask for admission on the half-open breaker takes one instead, and
 * nobody leaves the breaker half-open for a probe no one holds.
 * @example
 * const period = kept.period; // as the ask goes out
 * kept.keep({ token, until: now + (probe.expiresAt - askedAtWallClock), period });
 * kept.take(now); // the probe, once, while it has not expired
 */
export class KeptProbes {
  private probes: FleetProbe[] = [];
  private ended = 0;

  /** Counts the half-open periods known to have ended: an ask takes it as it goes out. */
  get period(): number {
    return this.ended;
  }

  /** Keeps `probe`, unless the breaker was seen to leave half-open since its ask went out (its period may be over). */
  keep(probe: FleetProbe): void {
    if (probe.period === this.ended) this.probes.push(probe);
  }

  /** The kept probe that expires first and has not expired at `now`, removed; undefined when none. */
  take(now: number): FleetProbe | undefined {
    this.probes = this.probes.filter((probe) => now < probe.until);
    if (this.probes.length === 0) return undefined;
    this.probes.sort((a, b) => a.until - b.until);
    return this.probes.shift();
  }

  /** The breaker left half-open: the kept probes belong to a period that is over. */
  clear(): void {
    if (this.probes.length > 0) this.probes = [];
    this.ended++;
  }
}
