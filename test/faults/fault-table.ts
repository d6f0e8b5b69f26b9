import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One fault of the suite, as the table shows it. */
export interface FaultRow {
  fault: string;
  /** What callers got during it: decisions that failed (503 or no answer) and were asked again. */
  errors: string;
  /** From the end of the fault (or from the kill, for a failover) to the last error. */
  recovery: string;
  /** Which kinds of state were gone afterwards (breakers, forced states, policies, budgets, idempotency records). */
  lost: string;
  /** Retries the store counted beyond those granted to a caller. */
  overCounts: string;
  /** Calls through the SDK (a retriable failure, then the retry): how many ended in an error. */
  sdk: string;
}

const COLUMNS: Array<[keyof FaultRow, string]> = [
  ['fault', 'fault'],
  ['errors', 'errors during it'],
  ['recovery', 'time to recover'],
  ['lost', 'state lost'],
  ['overCounts', 'over-counts'],
  ['sdk', "the SDK's view"],
];

/** The rows as one Markdown table. */
export function faultTable(rows: FaultRow[]): string {
  const lines = [
    `| ${COLUMNS.map(([, title]) => title).join(' | ')} |`,
    `| ${COLUMNS.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${COLUMNS.map(([key]) => row[key]).join(' | ')} |`),
  ];
  return lines.join('\n');
}

const RESULTS = join(__dirname, '../bench/results');

/** Writes the table (faults.md) and its rows (faults.json) to test/bench/results/; returns the table. */
export function writeFaultTable(rows: FaultRow[], header: string): string {
  const table = faultTable(rows);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'faults.md'), `${header}\n\n${table}\n`);
  writeFileSync(join(RESULTS, 'faults.json'), `${JSON.stringify(rows, null, 2)}\n`);
  return table;
}
