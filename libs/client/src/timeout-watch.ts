/** Something with a real-time expiry. */
export interface Expiring {
  expiresAt: number;
  expire(): void;
}

/**
 * Attempt timeouts on one timer: most attempts end long before their timeout, so instead of a
 * `setTimeout`/`clearTimeout` pair per attempt (the costliest part of a call's overhead) each is
 * put in a set, and one timer, armed for the earliest expiry, sweeps the expired ones out. Times
 * are real (`Date.now()`), whatever clock the client was given.
 */
export class TimeoutWatch {
  private readonly entries = new Set<Expiring>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  add(entry: Expiring): void {
    this.entries.add(entry);
    if (entry.expiresAt < this.armedFor) this.arm(entry.expiresAt);
    else if (this.entries.size === 1) this.timer?.ref();
  }

  delete(entry: Expiring): void {
    this.entries.delete(entry);
    // Left armed (re-arming per call is what this saves), but it no longer keeps the process alive.
    if (this.entries.size === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - Date.now()));
  }

  private sweep(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    const expired: Expiring[] = [];
    for (const entry of this.entries) {
      if (entry.expiresAt <= now) expired.push(entry);
      else if (entry.expiresAt < next) next = entry.expiresAt;
    }
    for (const entry of expired) this.entries.delete(entry);
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    for (const entry of expired) entry.expire();
  }
}
