/** Something with a real-time expiry, watched by a {@link TimeoutWatch}. */
export interface Expiring {
  expiresAt: number;
  expire(): void;
  /** Its neighbours on the watch's list: set by the watch, undefined while it is not watched. */
  watchPrev: Expiring | undefined;
  watchNext: Expiring | undefined;
}

/** Entries added before the list's head is replaced by a new one. */
const ADDS_PER_HEAD = 1024;

/**
 * Timeouts on one timer: most attempts end long before their timeout, so instead of a
 * `setTimeout`/`clearTimeout` pair per attempt (the costliest part of a call's overhead) each is
 * linked into a list through its own two fields, and one timer, armed for the earliest expiry,
 * sweeps the expired ones out. Adding and removing are a few field writes, and a removed entry is
 * unlinked at once: the list never keeps an ended attempt (and what it holds) alive until the next
 * garbage collection. The head is replaced every 1,024 adds, so it is nearly always as new as the
 * entries linked to it: writing a new object's address into one that has survived garbage
 * collections costs V8 a remembered-set entry, which was a tenth of a call's overhead. Times are
 * real (`Date.now()`), whatever clock the client was given. The timer never keeps the process
 * alive: a watched attempt waits on its own I/O, which does.
 */
export class TimeoutWatch {
  /** The list's ends meet here: `head.watchNext` is the oldest entry, `head.watchPrev` the newest. */
  private head = emptyHead();
  private addsLeft = ADDS_PER_HEAD;
  private watched = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  /** How many entries are watched. */
  get size(): number {
    return this.watched;
  }

  /** Watches `entry` until it expires or is deleted (an entry already watched is watched at its new expiry). */
  add(entry: Expiring): void {
    if (entry.watchPrev !== undefined) this.delete(entry);
    if (--this.addsLeft === 0) this.renewHead();
    const { head } = this;
    const last = head.watchPrev!;
    entry.watchPrev = last;
    entry.watchNext = head;
    last.watchNext = entry;
    head.watchPrev = entry;
    this.watched++;
    if (entry.expiresAt < this.armedFor) this.arm(entry.expiresAt);
  }

  /** Stops watching `entry` (nothing happens when it is not watched). */
  delete(entry: Expiring): void {
    const prev = entry.watchPrev;
    if (prev === undefined) return;
    const next = entry.watchNext!;
    prev.watchNext = next;
    next.watchPrev = prev;
    entry.watchPrev = entry.watchNext = undefined;
    this.watched--;
  }

  /** A new head takes the old one's place in the list. */
  private renewHead(): void {
    this.addsLeft = ADDS_PER_HEAD;
    const old = this.head;
    const head = emptyHead();
    if (old.watchNext !== old) {
      head.watchNext = old.watchNext;
      head.watchPrev = old.watchPrev;
      head.watchNext!.watchPrev = head;
      head.watchPrev!.watchNext = head;
    }
    this.head = head;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  /** The timer fired: the entries due are taken off the list, the timer is armed for the next, and then each expires. */
  private sweep(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    const expired: Expiring[] = [];
    const { head } = this;
    for (let entry = head.watchNext!; entry !== head;) {
      const following = entry.watchNext!;
      if (entry.expiresAt <= now) {
        this.delete(entry);
        expired.push(entry);
      } else if (entry.expiresAt < next) next = entry.expiresAt;
      entry = following;
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    for (const entry of expired) entry.expire();
  }
}

/** A list's head, linked to itself: never expires. */
function emptyHead(): Expiring {
  const head: Expiring = {
    expiresAt: Number.POSITIVE_INFINITY,
    expire: noop,
    watchPrev: undefined,
    watchNext: undefined,
  };
  head.watchPrev = head.watchNext = head;
  return head;
}

function noop(): void {}
