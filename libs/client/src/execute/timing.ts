import type { AutoTimeoutBounds, HedgeOptions } from '../options';

/**
 * The automatic per-attempt timeout: 2 × the fleet's p99 latency, clamped to the bounds; the upper
 * bound while no p99 is served.
 * @example
 * autoTimeoutMs(120, { minMs: 100, maxMs: 3000 }); // 240
 */
export function autoTimeoutMs(p99: number | null | undefined, bounds: AutoTimeoutBounds): number {
  if (p99 === null || p99 === undefined || !Number.isFinite(p99)) return bounds.maxMs;
  return Math.min(bounds.maxMs, Math.max(bounds.minMs, Math.ceil(2 * p99)));
}

/**
 * The hedge delay: the fixed one, or the fleet's p95 latency (the fallback delay while none is served).
 * @example
 * hedgeDelayMs(40, { delayMs: 'p95' }); // 40
 */
export function hedgeDelayMs(p95: number | null | undefined, hedge: HedgeOptions): number {
  if (hedge.delayMs !== 'p95') return hedge.delayMs;
  if (p95 === null || p95 === undefined || !Number.isFinite(p95)) return hedge.fallbackDelayMs ?? 100;
  return Math.max(1, Math.ceil(p95));
}
