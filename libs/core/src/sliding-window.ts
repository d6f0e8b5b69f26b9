/**
 * Counters over a sliding window of per-second buckets. The window at second `s` covers the
 * buckets `s - windowSeconds + 1 … s`. Running totals are kept so a read costs O(aged buckets),
 * not O(window). The Lua twin is libs/store/src/redis/lua/includes/window.lua.
 */
export class SlidingWindowCounter<F extends string> {
  private readonly buckets = new Map<number, Record<F, number>>();
  private readonly totals: Record<F, number>;
  private oldest = Number.POSITIVE_INFINITY;

  constructor(private readonly fields: readonly F[]) {
    this.totals = SlidingWindowCounter.zero(fields);
  }

  /** Adds `delta` into the bucket of `second`, after pruning what has aged out. */
  add(second: number, windowSeconds: number, delta: Partial<Record<F, number>>): void {
    this.prune(second, windowSeconds);
    let bucket = this.buckets.get(second);
    if (!bucket) {
      bucket = SlidingWindowCounter.zero(this.fields);
      this.buckets.set(second, bucket);
      this.oldest = Math.min(this.oldest, second);
    }
    for (const field of this.fields) {
      const value = delta[field] ?? 0;
      bucket[field] += value;
      this.totals[field] += value;
    }
  }

  /** The totals over the window ending at `second`. */
  sum(second: number, windowSeconds: number): Record<F, number> {
    this.prune(second, windowSeconds);
    return { ...this.totals };
  }

  /** True when nothing is left in the window. */
  isEmpty(): boolean {
    return this.buckets.size === 0;
  }

  clear(): void {
    this.buckets.clear();
    this.oldest = Number.POSITIVE_INFINITY;
    for (const field of this.fields) this.totals[field] = 0;
  }

  private prune(second: number, windowSeconds: number): void {
    const cutoff = second - windowSeconds; // buckets at or before the cutoff have aged out
    if (this.oldest > cutoff) return;
    for (const [bucketSecond, bucket] of this.buckets) {
      if (bucketSecond > cutoff) continue;
      for (const field of this.fields) this.totals[field] -= bucket[field];
      this.buckets.delete(bucketSecond);
    }
    this.oldest = this.buckets.size === 0 ? Number.POSITIVE_INFINITY : Math.min(...this.buckets.keys());
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
