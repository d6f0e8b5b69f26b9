// What bad input costs the coordinator: the time to refuse bodies of 1k, 10k and 100k unknown keys
// and of 1k, 10k and 100k levels of nesting, beside a valid retry decision, with how each grows
// against the body's size, so that linear growth (about 10x per 10x) shows. One built coordinator
// process (embedded store; `-- --redis` for the shared Redis, under a fresh key prefix) answers one
// request at a time on one keep-alive connection; the server's own CPU time per request is read
// from /proc. Run with `npm run bench:bad-input` (builds dist/ first); `-- --baseline <checkout>`
// runs another built checkout (its dist/) the same way, side by side.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, killAllChildrenNow, startChild, stopAllChildren, stopChild, waitReady } from './support.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const RESULTS = join(ROOT, 'test/bench/results');
const REDIS_URL = 'redis://127.0.0.1:6379';
const NAMESPACE = 'bench';
const RETRY = `/v1/${NAMESPACE}/deps/payments/retry`;
/** The body limit (apps/coordinator/src/common/body-limit.ts): 100k keys fit with base-36 names. */
const BODY_LIMIT_BYTES = 1024 * 1024;
/** Requests per body after the warm-up; fewer for the largest, which cost the most before the fix. */
const REPEATS = { small: 50, large: 10 };
/** Warm-up requests per body, so the JIT has compiled the path measured; fewer for the largest. */
const WARMUP = { small: 200, large: 3 };

const { values: options } = parseArgs({
  options: { baseline: { type: 'string' }, redis: { type: 'boolean', default: false } },
});

process.on('exit', killAllChildrenNow);

/** `{"attempt":1,"0":0,"1":0,…}`: `count` unknown keys with short (base-36) names after a valid field. */
const unknownKeys = (count) =>
  `{"attempt":1,${Array.from({ length: count }, (_, i) => `"${i.toString(36)}":0`).join(',')}}`;
/** A valid field, then an unknown one holding `levels` arrays, one inside the other. */
const nested = (levels) => `{"attempt":1,"x":${'['.repeat(levels)}${']'.repeat(levels)}}`;

const BODIES = [
  { name: 'valid decision', family: 'valid', size: 0, text: JSON.stringify({ attempt: 1, idempotent: true }) },
  ...[1_000, 10_000, 100_000].map((size) => ({
    name: `${size / 1000}k unknown keys`,
    family: 'keys',
    size,
    text: unknownKeys(size),
  })),
  ...[1_000, 10_000, 100_000].map((size) => ({
    name: `${size / 1000}k levels deep`,
    family: 'deep',
    size,
    text: nested(size),
  })),
];

/** User plus system CPU time of a process so far, in ms (Linux /proc; null elsewhere). */
async function cpuMs(pid) {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/** One POST on `agent`; resolves with the status, the answer's size and what its first detail names. */
function post(url, text, agent) {
  return new Promise((resolvePromise, reject) => {
    const started = process.hrtime.bigint();
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          const body = Buffer.concat(chunks);
          let said = '';
          try {
            const parsed = JSON.parse(body.toString());
            const detail = parsed.details?.[0];
            said = detail ? `${detail.field.slice(0, 12)}: ${detail.message}` : (parsed.reason ?? parsed.code ?? '');
          } catch {
            said = 'unparsed';
          }
          resolvePromise({ status: response.statusCode, bytes: body.length, ms, said });
        });
      },
    );
    request.on('error', reject);
    request.end(text);
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

/** Sends each body its warm-up and repeats, one at a time; the time and server CPU per request. */
async function measureBodies(url, pid) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const rows = [];
  try {
    for (const body of BODIES) {
      if (Buffer.byteLength(body.text) > BODY_LIMIT_BYTES) throw new Error(`${body.name} is over the body limit`);
      const repeats = body.size >= 100_000 ? REPEATS.large : REPEATS.small;
      const warmup = body.size >= 100_000 ? WARMUP.large : WARMUP.small;
      for (let i = 0; i < warmup; i++) await post(url + RETRY, body.text, agent);
      const cpuBefore = await cpuMs(pid);
      const answers = [];
      for (let i = 0; i < repeats; i++) answers.push(await post(url + RETRY, body.text, agent));
      const cpuAfter = await cpuMs(pid);
      rows.push({
        body: body.name,
        family: body.family,
        size: body.size,
        requestBytes: Buffer.byteLength(body.text),
        status: [...new Set(answers.map((answer) => answer.status))].join('/'),
        answerBytes: Math.max(...answers.map((answer) => answer.bytes)),
        said: answers[0].said.slice(0, 60),
        medianMs: median(answers.map((answer) => answer.ms)),
        cpuMsPerRequest: cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / repeats,
        repeats,
      });
    }
  } finally {
    agent.destroy();
  }
  return rows;
}

/** Each row's growth against the row of its family one size smaller (10x the body). */
function withGrowth(rows) {
  return rows.map((row) => {
    const previous = rows.find(
      (other) => other.family === row.family && other.size > 0 && other.size * 10 === row.size,
    );
    const ratio = (key) => (previous && previous[key] > 0 && row[key] !== null ? row[key] / previous[key] : null);
    return {
      ...row,
      bytesGrowth: ratio('requestBytes'),
      timeGrowth: ratio('medianMs'),
      cpuGrowth: ratio('cpuMsPerRequest'),
    };
  });
}

/** A budget no run exhausts, so the valid decision is a grant (the write path) every time. */
const POLICIES = { default: { retryBudget: { ratio: 1, minRetriesPerSecond: 100_000, windowSeconds: 10 } } };

async function measure(label, checkout) {
  const folder = await mkdtemp(join(os.tmpdir(), 'sluice-bench-bad-input-'));
  const policiesFile = join(folder, 'policies.json');
  await writeFile(policiesFile, JSON.stringify(POLICIES));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prefix = `sluice-bench-bad-input-${process.pid}-${Date.now().toString(36)}`;
  const env = {
    PATH: process.env.PATH,
    SLUICE_PORT: String(port),
    SLUICE_LOG_LEVEL: 'error',
    SLUICE_POLICIES_FILE: policiesFile,
    // Measured one request at a time: no shedding on the event-loop delay the old code's refusals cause.
    SLUICE_MAX_EVENT_LOOP_DELAY_MS: '0',
    ...(options.redis ? { SLUICE_REDIS_URL: REDIS_URL, SLUICE_KEY_PREFIX: prefix } : {}),
  };
  const child = startChild(process.execPath, [join(checkout, 'dist/apps/coordinator/src/main.js')], { env });
  try {
    await waitReady(`${url}/health/ready`, child);
    process.stdout.write(`${label}: measuring ${BODIES.length} bodies...\n`);
    return withGrowth(await measureBodies(url, child.pid));
  } finally {
    await stopChild(child);
    if (options.redis) await deleteKeys(prefix);
    await rm(folder, { recursive: true, force: true });
  }
}

async function deleteKeys(prefix) {
  const redis = new Redis(REDIS_URL, { protocol: 2 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  redis.disconnect();
}

function printTable(label, rows) {
  const number = (value, digits = 2) => (value === null || value === undefined ? '' : value.toFixed(digits));
  const kib = (bytes) => (bytes >= 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`);
  const header = [
    'body',
    'request',
    'status',
    'answer',
    'median ms',
    'server CPU ms',
    'size x',
    'time x',
    'CPU x',
    'answered',
  ];
  const lines = rows.map((row) => [
    row.body,
    kib(row.requestBytes),
    row.status,
    kib(row.answerBytes),
    number(row.medianMs),
    number(row.cpuMsPerRequest),
    number(row.bytesGrowth, 1),
    number(row.timeGrowth, 1),
    number(row.cpuGrowth, 1),
    row.said,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column].length)));
  const pad = (cell, column) =>
    column === 0 || column === header.length - 1 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]);
  const format = (cells) => cells.map(pad).join(' | ').trimEnd();
  console.log(`\n${label}\n${format(header)}\n${widths.map((width) => '-'.repeat(width)).join('-|-')}`);
  for (const line of lines) console.log(format(line));
}

async function main() {
  process.once('SIGINT', () => stopAllChildren().then(() => process.exit(130)));
  process.once('SIGTERM', () => stopAllChildren().then(() => process.exit(143)));
  try {
    const environment = {
      node: process.version,
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model,
      platform: `${os.platform()} ${os.release()}`,
      store: options.redis ? 'redis' : 'embedded',
      repeats: REPEATS,
      warmup: WARMUP,
    };
    console.log(
      `node ${environment.node}, ${environment.cores} cores (${environment.cpu}); ${environment.store} store; ` +
        `one request at a time, median of ${REPEATS.small} (${REPEATS.large} for 100k) after ${WARMUP.small} warm-up (${WARMUP.large})`,
    );
    const runs = [{ label: 'this checkout', rows: await measure('this checkout', ROOT) }];
    if (options.baseline) {
      const baseline = resolve(options.baseline);
      runs.push({ label: `baseline ${baseline}`, rows: await measure('baseline', baseline) });
    }
    for (const run of runs) printTable(run.label, run.rows);
    console.log('\nsize x, time x, CPU x: against the same kind of body one tenth the size (linear: 10x or less).');
    await mkdir(RESULTS, { recursive: true });
    const file = join(RESULTS, `bad-input-${new Date().toISOString().replaceAll(':', '-')}.json`);
    await writeFile(file, JSON.stringify({ environment, runs }, null, 2) + '\n');
    console.log(`raw results: ${file}`);
  } finally {
    await stopAllChildren();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
