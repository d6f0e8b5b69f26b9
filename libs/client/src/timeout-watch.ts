/** Something with a real-time expiry, watched by a {@link TimeoutWatch}. */
export interface Expiring {
  expiresAt: number;
  expire(): void;
  /** Which watch of it is current (0: not watched): set by the watch. */
  watchToken: number;
}

/** Entries are dropped from the list once it reaches this length at least (and twice what was live after the last drop). */
const MIN_COMPACT_LENGTH = 1024;

/**
 * Timeouts on one timer: most attempts end long before their timeout, so instead of a
 * `setTimeout`/`clearTimeout` pair per attempt (the costliest part of a call's overhead) each is
 * pushed on a list, and one timer, armed for the earliest expiry, sweeps the expired ones out.
 * Removing one only marks it (its token no longer matches); the list drops marked entries when it
 * has grown, so adding and removing cost a few field writes. Times are real (`Date.now()`),
 * whatever clock the client was given. The timer never keeps the process alive: a watched attempt
 * waits on its own I/O, which does.
 */
export class TimeoutWatch {
  private entries: Expiring[] = [];
  private tokens: number[] = [];
  private lastToken = 0;
  private compactAt = MIN_COMPACT_LENGTH;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  add(entry: Expiring): void {
    const token = ++this.lastToken;
    entry.watchToken = token;
    this.entries.push(entry);
    this.tokens.push(token);
    if (entry.expiresAt < this.armedFor) this.arm(entry.expiresAt);
    else if (this.entries.length >= this.compactAt) this.compact();
  }

  delete(entry: Expiring): void {
    entry.watchToken = 0;
  }

  /** Drops the entries no longer watched. */
  private compact(): void {
    const { entries, tokens } = this;
    let kept = 0;
    for (let i = 0; i < entries.length; i++) {
      if (entries[i].watchToken !== tokens[i]) continue;
      entries[kept] = entries[i];
      tokens[kept++] = tokens[i];
    }
    entries.length = tokens.length = kept;
    this.compactAt = Math.max(MIN_COMPACT_LENGTH, 2 * kept);
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.compact();
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    const expired: Expiring[] = [];
    const { entries } = this;
    for (const entry of entries) {
      if (entry.expiresAt <= now) expired.push(entry);
      else if (entry.expiresAt < next) next = entry.expiresAt;
    }
    for (const entry of expired) entry.watchToken = 0;
    if (expired.length > 0) this.compact();
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    for (const entry of expired) entry.expire();
  }
}
