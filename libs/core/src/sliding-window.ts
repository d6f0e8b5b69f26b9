/**
 * Counters over a sliding window of per-second buckets, each holding only its counters that are
 * not zero (29 latency counters cost what the non-zero ones do). The window at second `s` covers the
 * buckets `s - windowSeconds + 1 … s`. Running totals are kept so a read costs O(aged buckets),
 * not O(window). Buckets past `s` (left by a clock step back) are dropped: they belong to no
 * second the clock has reached. The Lua twin is libs/store/src/redis/lua/includes/window.lua.
 */
export class SlidingWindowCounter<F extends string> {
  private readonly buckets = new Map<number, Partial<Record<F, number>>>();
  private readonly totals: Record<F, number>;
  private oldest = Number.POSITIVE_INFINITY;
  private newest = Number.NEGATIVE_INFINITY;

  constructor(private readonly fields: readonly F[]) {
    this.totals = SlidingWindowCounter.zero(fields);
  }

  /** Adds `delta` into the bucket of `second` (keeping no zero), after pruning what has aged out. */
  add(second: number, windowSeconds: number, delta: Partial<Record<F, number>>): void {
    this.prune(second, windowSeconds);
    const counted = this.fields.filter((field) => (delta[field] ?? 0) !== 0);
    if (counted.length === 0) return;
    let bucket = this.buckets.get(second);
    if (!bucket) {
      bucket = {};
      this.buckets.set(second, bucket);
      this.oldest = Math.min(this.oldest, second);
      this.newest = Math.max(this.newest, second);
    }
    for (const field of counted) {
      const value = delta[field] ?? 0;
      bucket[field] = (bucket[field] ?? 0) + value;
      this.totals[field] += value;
    }
  }

  /** The totals over the window ending at `second`. */
  sum(second: number, windowSeconds: number): Record<F, number> {
    this.prune(second, windowSeconds);
    return { ...this.totals };
  }

  /** The buckets of the window ending at `second`, oldest first, after pruning what has aged out. */
  bucketsOf(second: number, windowSeconds: number): Array<[second: number, counts: Readonly<Record<F, number>>]> {
    this.prune(second, windowSeconds);
    const zero = SlidingWindowCounter.zero(this.fields);
    return [...this.buckets]
      .sort(([a], [b]) => a - b)
      .map(([at, counts]): [number, Record<F, number>] => [at, { ...zero, ...counts }]);
  }

  /** How many counters the buckets hold (what the window costs in memory). */
  get storedCounters(): number {
    let stored = 0;
    for (const bucket of this.buckets.values()) stored += Object.keys(bucket).length;
    return stored;
  }

  /** True when nothing is left in the window. */
  isEmpty(): boolean {
    return this.buckets.size === 0;
  }

  clear(): void {
    this.buckets.clear();
    this.oldest = Number.POSITIVE_INFINITY;
    this.newest = Number.NEGATIVE_INFINITY;
    for (const field of this.fields) this.totals[field] = 0;
  }

  private prune(second: number, windowSeconds: number): void {
    const cutoff = second - windowSeconds; // buckets at or before the cutoff have aged out
    if (this.oldest > cutoff && this.newest <= second) return;
    for (const [bucketSecond, bucket] of this.buckets) {
      if (bucketSecond > cutoff && bucketSecond <= second) continue;
      for (const field of this.fields) this.totals[field] -= bucket[field] ?? 0;
      this.buckets.delete(bucketSecond);
    }
    const seconds = [...this.buckets.keys()];
    this.oldest = seconds.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...seconds);
    this.newest = seconds.length === 0 ? Number.NEGATIVE_INFINITY : Math.max(...seconds);
  }

  private static zero<F extends string>(fields: readonly F[]): Record<F, number> {
    const record = {} as Record<F, number>;
    for (const field of fields) record[field] = 0;
    return record;
  }
}

/** The whole second an epoch-millisecond instant falls in. */
export function epochSecond(epochMs: number): number {
  return Math.floor(epochMs / 1000);
}
