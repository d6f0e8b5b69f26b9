// What the dependency chart draws, as plain data: the coordinator's history of the minutes before
// the page opened (a point per 10 s step that had reports), then the readings the page has made
// since, as line segments broken where nothing was reported, and a band of breaker states.

/** The longest span drawn: the history the coordinator keeps. */
export const LONGEST_SPAN_MS = 15 * 60 * 1000;
const SHORTEST_SPAN_MS = 60 * 1000;
/** Readings further apart than this are not joined: nothing was reported between them. */
const GAP_MS = 25 * 1000;

/**
 * A reading's rate is null when nothing was measured (no call in the window or step): no point is drawn.
 * @typedef {{ at: number, budgetUse: number | null, failureRate: number | null, state: string, live: boolean }} Reading
 * @typedef {{ from: number, to: number, state: string }} StateSpan
 */

/** The series the chart draws, each a reading's field. */
export const SERIES_KEYS = /** @type {const} */ (['budgetUse', 'failureRate']);

/**
 * The readings of the chart, oldest first: the history's steps that began before the page's first
 * reading, then the page's readings.
 * @param {Array<{ at: number, budgetUse: number, failureRate: number, state: string }>} history
 * @param {Array<{ at: number, budgetUse: number, failureRate: number, state: string }>} samples
 * @returns {Reading[]}
 */
export function mergeReadings(history, samples) {
  const firstLive = samples[0]?.at ?? Number.POSITIVE_INFINITY;
  return [
    ...history.filter((point) => point.at < firstLive).map((point) => ({ ...point, live: false })),
    ...samples.map((sample) => ({ ...sample, live: true })),
  ];
}

/**
 * Everything the chart needs, for the window that ends `now`: from the oldest reading (at least a
 * minute, at most 15 back), the readings in it as segments, and the breaker's states as spans;
 * `breaker` (the state now and since when) is the latest word on the state.
 * @param {{ history: any[], samples: any[], breaker?: { state: string, since: number | null }, now: number }} input
 */
export function chartData({ history, samples, breaker, now }) {
  const readings = mergeReadings(history, samples);
  const oldest = readings[0]?.at ?? now;
  const spanMs = Math.min(LONGEST_SPAN_MS, Math.max(SHORTEST_SPAN_MS, now - oldest));
  const from = now - spanMs;
  const shown = readings.filter((reading) => reading.at >= from && reading.at <= now);
  const lines = Object.fromEntries(SERIES_KEYS.map((key) => [key, segmentsOf(shown, key)]));
  return { from, spanMs, readings: shown, lines, states: statesOf(shown, breaker, from, now) };
}

/**
 * The readings that measured `key`, as runs without a gap (nothing reported, or nothing measured).
 * @param {Reading[]} readings
 * @param {typeof SERIES_KEYS[number]} key
 */
function segmentsOf(readings, key) {
  /** @type {Reading[][]} */
  const segments = [];
  let previous;
  for (const reading of readings) {
    if (reading[key] === null) {
      previous = undefined;
      continue;
    }
    if (!previous || reading.at - previous.at > GAP_MS) segments.push([]);
    segments[segments.length - 1].push(reading);
    previous = reading;
  }
  return segments;
}

/**
 * Each state from when it was read (or entered, for the breaker now) until the next.
 * @param {Reading[]} readings
 * @param {{ state: string, since: number | null } | undefined} breaker
 * @returns {StateSpan[]}
 */
function statesOf(readings, breaker, from, now) {
  const changes = readings.map((reading) => ({ at: reading.at, state: reading.state }));
  if (breaker) {
    const since = Math.max(breaker.since ?? now, from);
    // What the breaker says now holds since it entered it, whatever older readings said.
    while (changes.length > 0 && changes[changes.length - 1].at >= since) changes.pop();
    changes.push({ at: since, state: breaker.state });
  }
  /** @type {StateSpan[]} */
  const spans = [];
  changes.forEach((change, i) => {
    const to = changes[i + 1]?.at ?? now;
    const last = spans[spans.length - 1];
    if (last && last.state === change.state) last.to = to;
    else if (to > change.at) spans.push({ from: Math.max(change.at, from), to, state: change.state });
  });
  return spans;
}
