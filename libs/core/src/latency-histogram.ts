/**
 * Fleet latency histograms on fixed bucket bounds (ms), so every reporter's counts add up.
 * A sample in (bound[i-1], bound[i]] counts in bucket i; the last bucket holds what is above
 * the largest bound. The Lua twin is libs/store/src/redis/lua/includes/latency.lua.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Object.freeze([
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 15000,
  20000, 30000, 60000,
]);

/** Counter names of a latency window, one per fixed bucket (l1 … l29, the overflow last), as in the Lua include. */
export const LATENCY_FIELDS: readonly string[] = Object.freeze(
  Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => `l${i + 1}`),
);

/**
 * Moves a reporter's histogram onto the fixed bounds: each of its buckets counts in the fixed
 * bucket that holds its upper bound, so a percentile is never underestimated.
 */
export function rebucket(boundsMs: readonly number[], counts: readonly number[]): number[] {
  const fixed = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  counts.forEach((count, i) => {
    if (count === 0) return;
    const upper = i < boundsMs.length ? boundsMs[i] : Number.POSITIVE_INFINITY;
    fixed[fixedBucketOf(upper)] += count;
  });
  return fixed;
}

/** The fixed bucket holding a latency of `ms`. */
export function fixedBucketOf(ms: number): number {
  const index = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return index === -1 ? LATENCY_BOUNDS_MS.length : index;
}

/**
 * The q-quantile (0 < q ≤ 1) of fixed-bound counts, as the upper bound of the bucket that holds
 * it (the largest bound for the overflow bucket); null with no samples.
 */
export function latencyQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.ceil(q * total - 1e-9);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i];
    if (seen >= rank) return LATENCY_BOUNDS_MS[Math.min(i, LATENCY_BOUNDS_MS.length - 1)];
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
}
