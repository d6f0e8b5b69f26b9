/** How results are printed: aligned columns for people, or JSON for scripts (`--output json`). */
export const OUTPUT_FORMATS = ['table', 'json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface Column<T> {
  header: string;
  value(row: T): string | number | boolean | null | undefined;
}

/** Rows as text columns, a header line first; an empty list says so. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const cells = [columns.map((column) => column.header), ...rows.map((row) => columns.map((c) => text(c.value(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `key  value` lines for one object's fields. */
export function fields(entries: ReadonlyArray<[string, unknown]>): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${key.padEnd(width)}  ${text(value)}`).join('\n');
}

export function text(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** An instant (epoch ms) as ISO 8601, or '-'. */
export const instant = (at: number | null | undefined): string =>
  typeof at === 'number' ? new Date(at).toISOString() : '-';

/** Prints a command's result: `json` as is, or the table rendering. */
export function print(format: OutputFormat, json: unknown, render: () => string): void {
  process.stdout.write(`${format === 'json' ? JSON.stringify(json, null, 2) : render()}\n`);
}
