import { InvalidArgumentError } from 'commander';

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+)(ms|s|m|h|d)$/;

/** `90s`, `10m`, `2h`, `1d` as milliseconds; anything else is a usage error naming the form. */
export function durationMs(value: string): number {
  const match = DURATION.exec(value.trim());
  if (!match) throw new InvalidArgumentError('a duration like 90s, 10m, 2h or 1d');
  return Number(match[1]) * UNITS_MS[match[2]];
}

/** A duration in whole seconds, at least one. */
export function durationSeconds(value: string): number {
  const seconds = durationMs(value) / 1000;
  if (!Number.isInteger(seconds) || seconds < 1) throw new InvalidArgumentError('whole seconds, at least 1s');
  return seconds;
}

/** `--since`: a duration back from now (`1h`) or an ISO 8601 instant, as epoch ms. */
export function sinceInstant(value: string, now = Date.now()): number {
  if (DURATION.test(value.trim())) return now - durationMs(value);
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new InvalidArgumentError('a duration back from now (30m, 2h) or an ISO 8601 time');
  return at;
}

/** Milliseconds as `--for` takes them: `10m`, `1h30m`, `90s` → `1m30s`; under a second, `250ms`. */
export function durationText(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let rest = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, seconds] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const count = Math.floor(rest / seconds);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * seconds;
  }
  return parts.join('');
}
