/**
 * The fleet probes of one dependency granted in admission answers that came after their caller
 * stopped waiting. Each is still the fleet's probe (the coordinator lets no other out until its
 * outcome or its expiry), so the next attempt that would ask for admission on the half-open breaker
 * takes one instead, and nobody leaves the breaker half-open for a probe no one holds.
 * @example
 * const period = kept.period; // as the ask goes out
 * kept.keep(decision.probe.token, now + (decision.probe.expiresAt - askedAtWallClock), period);
 * kept.take(now); // the token, once, while it has not expired
 */
export class KeptProbes {
  private probes: Array<{ token: string; until: number }> = [];
  private ended = 0;

  /** Counts the half-open periods known to have ended: an ask takes it as it goes out. */
  get period(): number {
    return this.ended;
  }

  /**
   * Keeps `token` until `until` (clock ms), unless the breaker was seen to leave half-open since
   * its ask went out in `period` (the probe may belong to a period that is over).
   */
  keep(token: string, until: number, period: number): void {
    if (period === this.ended) this.probes.push({ token, until });
  }

  /** The kept probe that expires first and has not expired at `now`, removed; undefined when none. */
  take(now: number): string | undefined {
    this.probes = this.probes.filter((probe) => now < probe.until);
    if (this.probes.length === 0) return undefined;
    this.probes.sort((a, b) => a.until - b.until);
    return this.probes.shift()?.token;
  }

  /** The breaker left half-open: the kept probes belong to a period that is over. */
  clear(): void {
    this.probes = [];
    this.ended++;
  }
}
