/** One line of a diff: kept (' '), only in the first document ('-'), only in the second ('+'). */
export interface DiffLine {
  op: ' ' | '-' | '+';
  line: string;
}

/** A JSON value as stable lines: two spaces of indentation, object keys sorted. */
export function jsonLines(value: unknown): string[] {
  return JSON.stringify(sortKeys(value), null, 2).split('\n');
}

/** The same value with every object's keys in sorted order. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/** The line diff from `before` to `after`, removed lines first (longest common subsequence; policy documents are small). */
export function diffLines(before: string[], after: string[]): DiffLine[] {
  const common: number[][] = Array.from({ length: before.length + 1 }, () =>
    new Array<number>(after.length + 1).fill(0),
  );
  for (let i = before.length - 1; i >= 0; i--) {
    for (let j = after.length - 1; j >= 0; j--) {
      common[i][j] = before[i] === after[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && before[i] === after[j]) {
      lines.push({ op: ' ', line: before[i++] });
      j++;
    } else if (i < before.length && (j === after.length || common[i + 1][j] >= common[i][j + 1])) {
      lines.push({ op: '-', line: before[i++] });
    } else {
      lines.push({ op: '+', line: after[j++] });
    }
  }
  return lines;
}

/** A diff as text: `- `, `+ ` and `  ` prefixed lines. */
export const diffText = (lines: DiffLine[]): string => lines.map(({ op, line }) => `${op} ${line}`).join('\n');
