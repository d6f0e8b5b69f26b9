// How numbers, times and states read on screen.

export const STATE_LABELS = {
  closed: 'closed',
  open: 'open',
  half_open: 'half-open',
  forced_open: 'forced open',
  forced_closed: 'forced closed',
};

export function percent(ratio) {
  if (ratio === null || ratio === undefined || Number.isNaN(ratio)) return '—';
  return `${(ratio * 100).toFixed(ratio > 0 && ratio < 0.1 ? 1 : 0)} %`;
}

export function millis(value) {
  if (value === null || value === undefined) return '—';
  return value >= 1000 ? `${(value / 1000).toFixed(value % 1000 === 0 ? 0 : 1)} s` : `${value} ms`;
}

/** The time of day in UTC, as the CLI prints it: `14:45:01Z`. */
export function clock(at) {
  if (!at) return '—';
  return `${new Date(at).toISOString().slice(11, 19)}Z`;
}

/** An instant in UTC, ISO 8601 to the second: `2026-12-03T14:45:01Z` (never 12/03 or 03/12). */
export function dateTime(at) {
  if (!at) return '—';
  return `${new Date(at).toISOString().slice(0, 19)}Z`;
}

/** How much longer, in whole units: "29 m", "2 h 5 m", "40 s". */
export function remaining(at, now = Date.now()) {
  const seconds = Math.max(0, Math.round((at - now) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} m`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} m`;
}

/** A duration as an operator gave it: "90 s" → "1 m 30 s", "10 m", "2 h 5 m". */
export function duration(ms) {
  const seconds = Math.round(ms / 1000);
  /** @type {Array<[number, string]>} */
  const parts = [
    [Math.floor(seconds / 3600), 'h'],
    [Math.floor((seconds % 3600) / 60), 'm'],
    [seconds % 60, 's'],
  ];
  const counted = parts.filter(([count]) => count > 0);
  return counted.length === 0 ? '0 s' : counted.map(([count, unit]) => `${count} ${unit}`).join(' ');
}

/**
 * How long an audited trip or force-close lasts: "for 10 m, until 14:55:01Z", "until reset", or
 * null for another action.
 * @param {{ action: string, durationMs?: number | null, endsAt?: number | null }} entry
 */
export function forcedFor(entry) {
  if (typeof entry.durationMs === 'number') {
    return `for ${duration(entry.durationMs)}${entry.endsAt ? `, until ${clock(entry.endsAt)}` : ''}`;
  }
  return entry.action === 'breaker.trip' || entry.action === 'breaker.force_close' ? 'until reset' : null;
}

/** "in 4 m 10 s" / "5 s ago", for since and openUntil. */
export function relative(at, now = Date.now()) {
  if (!at) return '';
  const seconds = Math.round((at - now) / 1000);
  const magnitude = Math.abs(seconds);
  const text =
    magnitude < 60
      ? `${magnitude} s`
      : magnitude < 3600
        ? `${Math.floor(magnitude / 60)} m ${magnitude % 60} s`
        : `${Math.floor(magnitude / 3600)} h ${Math.floor((magnitude % 3600) / 60)} m`;
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
}

/** "10m", "90s", "1h", "600" (seconds) → seconds; null when empty; NaN when unreadable. */
export function parseDuration(text) {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const match = /^(\d+)\s*(s|m|h)?$/i.exec(trimmed);
  if (!match) return Number.NaN;
  const unit = { s: 1, m: 60, h: 3600 }[(match[2] ?? 's').toLowerCase()];
  return Number(match[1]) * unit;
}

/**
 * The retries a budget weighs against its limit: under an adaptive budget those that did not succeed
 * (never below 0), under a fixed one (or an answer without retriesSucceeded) every one.
 */
export function netRetries(budget) {
  if (budget.mode === 'fixed') return budget.retries;
  return Math.max(budget.retries - (budget.retriesSucceeded ?? 0), 0);
}

/** A share of a bound; 1 when the bound is 0 and something was counted. */
function shareOf(count, bound) {
  if (bound === 0) return count > 0 ? 1 : 0;
  return count / bound;
}

/**
 * The budget's use as a ratio: the larger of the net retries over the limit and the retries over
 * the cap (an adaptive budget grants while both are below 1).
 */
export function budgetUse(budget) {
  if (!budget) return null;
  const net = shareOf(netRetries(budget), budget.limit);
  return budget.cap === undefined ? net : Math.max(net, shareOf(budget.retries, budget.cap));
}

export function isExhausted(budget) {
  if (!budget) return false;
  return netRetries(budget) >= budget.limit || (budget.cap !== undefined && budget.retries >= budget.cap);
}
