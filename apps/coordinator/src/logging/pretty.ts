import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields a line shows in its own place, or not at all (pid and hostname say nothing in a terminal). */
const PLACED = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'context', 'err', 'stack']);

/**
 * One JSON log entry as a person reads it (SLUICE_LOG_FORMAT=pretty):
 * `2026-03-12T14:45:01.123Z INFO  [Sluice] listening on http://127.0.0.1:8080`, the other fields
 * as ` key=value` after it, a stack indented on the lines below. A line that is not JSON is kept.
 */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return `${json}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString() : '-';
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const context = typeof entry.context === 'string' ? ` [${entry.context}]` : '';
  const fields = Object.entries(entry)
    .filter(([name, value]) => !PLACED.has(name) && value !== undefined)
    .map(
      ([name, value]) => ` ${name}=${typeof value === 'string' && /^\S+$/.test(value) ? value : JSON.stringify(value)}`,
    )
    .join('');
  const err = entry.err as { stack?: unknown } | undefined;
  const stack = typeof entry.stack === 'string' ? entry.stack : typeof err?.stack === 'string' ? err.stack : '';
  const below = stack ? `\n${stack.replace(/^/gm, '    ')}` : '';
  return `${time} ${level}${context} ${String(entry.msg ?? '')}${fields}${below}\n`;
}

/** A pino destination writing every entry through prettyLine to `out` (stdout). */
export function prettyDestination(out: { write(text: string): unknown } = process.stdout): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') out.write(prettyLine(line));
    },
  };
}
