// Overhead of the SDK's execute() with a closed breaker over a direct call, side by side with
// cockatiel's retry(...).execute and a bare call, in one run, in ns per call: wall time, and this
// process's CPU time (user + system), which other processes' load on a shared machine disturbs less.
// Run with `npm run bench:sdk` (builds the service and the client package first). The client is the
// package as published (libs/client/dist, one bundle), connected to a real coordinator (the built
// service, embedded store) with its event stream and reports running. It runs once on every
// supported Node.js line (each a child process of its own, one after the other; .ci/node-line gives
// the binaries).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExponentialBackoff, handleAll, retry } from 'cockatiel';
import { nodeLines } from '../support/node-lines.mjs';
import { freePort, startChild, stopChild, waitReady } from './support.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { Sluice } = require(join(ROOT, 'libs/client/dist/index.js'));

const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARMUP_CALLS = 200_000;

/** The call under every wrapper: an async function that answers at once. */
let sink = 0;
const work = async () => {
  sink++;
  return sink;
};

/** Wall and CPU ns per call of `call` over `calls` sequential awaited calls. */
async function measure(call, calls) {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await call();
  const wall = Number(process.hrtime.bigint() - start) / calls;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: ((used.user + used.system) * 1000) / calls };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  const coordinator = startChild(process.execPath, ['dist/apps/coordinator/src/main.js'], {
    cwd: ROOT,
    env: { ...env, SLUICE_PORT: String(port), SLUICE_LOG_LEVEL: 'warn' },
  });
  const sluice = new Sluice({ baseUrls: [baseUrl], namespace: 'bench', logger: false });
  try {
    // A minute: on a shared machine under load, a coordinator has taken over 20 s to boot.
    await waitReady(`${baseUrl}/health/ready`, coordinator, 60_000);
    const payments = sluice.dependency('payments', { idempotent: true });
    const policy = retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });

    const contenders = [
      ['bare call', () => work()],
      ['Sluice execute (closed breaker)', () => payments.execute(work)],
      ['cockatiel retry(...).execute', () => policy.execute(work)],
    ];
    for (const [, call] of contenders) await measure(call, WARMUP_CALLS);
    await sluice.flush();
    if (payments.breakerState !== 'closed') throw new Error(`expected a closed breaker, got ${payments.breakerState}`);

    // Interleaved rounds, so drift on a shared machine hits every contender alike, and the order
    // turns each round, so each contender runs in every place (the one after another pays for its
    // garbage); median per contender.
    const samples = new Map(contenders.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]);
      for (const [name, call] of order) samples.get(name).push(await measure(call, CALLS));
    }
    const of = (name, kind) => median(samples.get(name).map((sample) => sample[kind]));
    const overhead = (name, kind) => of(name, kind) - of('bare call', kind);
    const rows = contenders.map(([name]) => {
      const bare = name === 'bare call';
      const cells = ['wall', 'cpu'].flatMap((kind) => [of(name, kind), bare ? '—' : overhead(name, kind)]);
      return [name, ...cells.map((cell) => (typeof cell === 'number' ? cell.toFixed(0) : cell))];
    });
    printTable(['contender', 'wall ns/call', 'wall overhead', 'CPU ns/call', 'CPU overhead'], rows);
    const ours = 'Sluice execute (closed breaker)';
    const cockatiel = 'cockatiel retry(...).execute';
    for (const kind of ['wall', 'cpu']) {
      const [sluiceNs, cockatielNs] = [overhead(ours, kind), overhead(cockatiel, kind)];
      const verdict = sluiceNs <= cockatielNs ? 'at or below' : 'above';
      console.log(
        `${kind} overhead: Sluice ${sluiceNs.toFixed(0)} ns, cockatiel ${cockatielNs.toFixed(0)} ns (${verdict} cockatiel's)`,
      );
    }
    console.log(
      `\n${ROUNDS} interleaved rounds (order turning) of ${CALLS} sequential awaited calls each; medians. Node ${process.version}.`,
    );
    console.log(`fallback active during the run: ${sluice.fallbackActive}`);
  } finally {
    await sluice.close();
    await stopChild(coordinator);
  }
}

function printTable(header, rows) {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => `| ${cells.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  rows.forEach((row) => console.log(line(row)));
}

/** Runs this file again on each supported line, in turn. */
function onEveryLine() {
  const failed = [];
  for (const { line, node } of nodeLines()) {
    console.log(`\n## Node ${line}\n`);
    const run = spawnSync(node, [fileURLToPath(import.meta.url)], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_SDK_ONE_LINE: '1' },
    });
    if (run.status !== 0) failed.push(line);
  }
  if (failed.length > 0) throw new Error(`bench:sdk failed on Node ${failed.join(', ')}`);
}

(process.env.BENCH_SDK_ONE_LINE ? main() : Promise.resolve().then(onEveryLine)).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
