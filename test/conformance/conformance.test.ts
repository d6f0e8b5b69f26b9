import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const DRIVER = ['node', 'test/conformance/drivers/typescript.mjs'];

/** The TypeScript driver as it is, and three copies of it broken on purpose (CONFORMANCE_BREAK). */
const CLIENTS = [
  { name: 'typescript', command: DRIVER },
  { name: 'drops-request-id', command: DRIVER, env: { CONFORMANCE_BREAK: 'drop-request-id' } },
  { name: 'never-reads-feed', command: DRIVER, env: { CONFORMANCE_BREAK: 'no-feed' } },
  { name: 'never-coalesces', command: DRIVER, env: { CONFORMANCE_BREAK: 'no-coalesce' } },
];
const SCENARIOS = ['retry-granted', 'reask-same-id', 'coalescing', 'denial-cache', 'sse-breaker-feed'];

interface Cell {
  status: 'pass' | 'fail' | 'skipped';
  message?: string;
}

/** Runs the suite with `clients` through `scenarios`: its exit code and its cells by `scenario/client`. */
function runSuite(dir: string): Promise<{ code: number | null; cells: Record<string, Cell>; output: string }> {
  const clientsFile = join(dir, 'clients.json');
  const resultsFile = join(dir, 'results.json');
  writeFileSync(clientsFile, JSON.stringify(CLIENTS));
  const args = [
    'test/conformance/run.mjs',
    '--clients-file',
    clientsFile,
    '--scenarios',
    SCENARIOS.join(','),
    '--json',
    resultsFile,
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 280_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        let cells: Record<string, Cell> = {};
        try {
          cells = JSON.parse(readFileSync(resultsFile, 'utf8')) as Record<string, Cell>;
        } catch {
          // no results: the assertions below show the output
        }
        resolve({ code, cells, output: `${stdout}\n${stderr.slice(-4000)}` });
      },
    );
  });
}

describe('the conformance suite', () => {
  let dir: string;
  let suite: Awaited<ReturnType<typeof runSuite>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-conformance-'));
    suite = await runSuite(dir);
  }, 300_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const cell = (scenario: string, client: string) => ({
    cell: `${scenario}/${client}`,
    ...suite.cells[`${scenario}/${client}`],
  });

  it('passes the TypeScript SDK on every scenario it ran', () => {
    for (const scenario of SCENARIOS) {
      expect(cell(scenario, 'typescript')).toEqual({
        cell: `${scenario}/typescript`,
        status: 'pass',
        text: 'pass',
        message: null,
        ms: expect.any(Number),
      });
    }
  });

  it('fails a client that sends its retry asks without requestId', () => {
    for (const scenario of ['retry-granted', 'reask-same-id', 'coalescing']) {
      expect(cell(scenario, 'drops-request-id')).toMatchObject({
        status: 'fail',
        message: expect.stringContaining('without a valid requestId'),
      });
    }
  });

  it('fails a client that never reads the breaker feed', () => {
    expect(cell('sse-breaker-feed', 'never-reads-feed')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining("the client's breaker closed"),
    });
  });

  it('fails a client that neither coalesces its asks nor holds a denial', () => {
    expect(cell('coalescing', 'never-coalesces')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('10 decisions requests'),
    });
    expect(cell('denial-cache', 'never-coalesces')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('4 retry asks, expected 2'),
    });
  });

  it('exits non-zero when any cell fails, and prints the table', () => {
    expect(suite.code).toBe(1);
    expect(suite.output).toMatch(
      /\| scenario +\| typescript +\| drops-request-id +\| never-reads-feed +\| never-coalesces +\|/,
    );
  });
});
