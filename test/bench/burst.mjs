// A burst of simultaneous retry decisions against two coordinators on a healthy Redis: how many
// answers are a false 503 (`store_unavailable` while Redis answers each script in microseconds),
// and whether the grants add up to the budget. Run with `npm run bench:burst` (builds dist/ first);
// `-- --baseline <checkout>` runs another built checkout (its dist/) the same way, side by side.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, killAllChildrenNow, startChild, stopAllChildren, waitReady } from './support.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const RESULTS = join(ROOT, 'test/bench/results');
const REDIS_URL = 'redis://127.0.0.1:6379';
const NAMESPACE = 'burst';
/** Each run asks for exactly more retries than the budget holds, so grants must stop at the limit. */
const BUDGET = { ratio: 0, minRetriesPerSecond: 50, windowSeconds: 10 };
const LIMIT = BUDGET.minRetriesPerSecond * BUDGET.windowSeconds;
const RUNS = [
  { label: 'fresh connections', n: 150, keepAlive: false },
  { label: 'fresh connections', n: 300, keepAlive: false },
  { label: 'fresh connections', n: 1000, keepAlive: false },
  { label: 'keep-alive', n: 300, keepAlive: true },
];

const { values: options } = parseArgs({
  options: { baseline: { type: 'string' }, 'store-timeout-ms': { type: 'string', default: '50' } },
});

process.on('exit', killAllChildrenNow);

async function startCoordinators(checkout, prefix, policiesFile) {
  const main = join(checkout, 'dist/apps/coordinator/src/main.js');
  const urls = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const child = startChild(process.execPath, [main], {
      env: {
        PATH: process.env.PATH,
        SLUICE_PORT: String(port),
        SLUICE_REDIS_URL: REDIS_URL,
        SLUICE_KEY_PREFIX: prefix,
        SLUICE_POLICIES_FILE: policiesFile,
        SLUICE_STORE_TIMEOUT_MS: options['store-timeout-ms'],
        SLUICE_LOG_LEVEL: 'error',
      },
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(`${url}/health/ready`, child);
    urls.push(url);
  }
  return urls;
}

/** One POST; resolves with the status and the decision's reason (or the error code). */
function ask(url, dependency, agent) {
  const body = JSON.stringify({ attempt: 1, idempotent: true, status: 503 });
  return new Promise((resolvePromise) => {
    const request = http.request(
      `${url}/v1/${NAMESPACE}/deps/${dependency}/retry`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => {
          let reason = 'unparsed';
          try {
            const parsed = JSON.parse(text);
            reason = parsed.reason ?? parsed.code;
          } catch {
            // kept as unparsed
          }
          resolvePromise({ status: response.statusCode, reason });
        });
      },
    );
    request.on('error', (error) => resolvePromise({ status: 0, reason: error.code ?? error.message }));
    request.end(body);
  });
}

async function burst(urls, run, index) {
  const dependency = `dep-${index}`;
  const agents = urls.map(() =>
    run.keepAlive ? new http.Agent({ keepAlive: true, maxSockets: run.n }) : new http.Agent({ keepAlive: false }),
  );
  if (run.keepAlive) {
    // Open the connections first, so the burst itself travels on warm sockets.
    await Promise.all(
      Array.from({ length: run.n }, (_, i) => fetchHealth(urls[i % urls.length], agents[i % urls.length])),
    );
  }
  const answers = await Promise.all(
    Array.from({ length: run.n }, (_, i) => ask(urls[i % urls.length], dependency, agents[i % urls.length])),
  );
  agents.forEach((agent) => agent.destroy());
  // What the budget counted: a grant answered 503 that still counted is a change the caller never saw.
  const view = await (await fetch(`${urls[0]}/v1/${NAMESPACE}/deps/${dependency}`)).json();
  const count = (predicate) => answers.filter(predicate).length;
  return {
    n: run.n,
    ok: count((a) => a.status === 200),
    storeUnavailable: count((a) => a.reason === 'store_unavailable'),
    overloaded: count((a) => a.reason === 'overloaded'),
    other: count((a) => a.status !== 200 && a.reason !== 'store_unavailable' && a.reason !== 'overloaded'),
    granted: count((a) => a.reason === 'granted'),
    counted: view.budget?.retries,
  };
}

function fetchHealth(url, agent) {
  return new Promise((resolvePromise) => {
    http
      .get(`${url}/health/live`, { agent }, (response) => {
        response.resume();
        response.on('end', resolvePromise);
      })
      .on('error', resolvePromise);
  });
}

async function measure(checkout) {
  const prefix = `sluice-burst-${process.pid}-${Date.now().toString(36)}`;
  const folder = await mkdtemp(join(os.tmpdir(), 'sluice-burst-'));
  const policiesFile = join(folder, 'policies.json');
  await writeFile(policiesFile, JSON.stringify({ default: { retryBudget: BUDGET } }));
  const urls = await startCoordinators(checkout, prefix, policiesFile);
  const rows = [];
  try {
    for (const [index, run] of RUNS.entries()) {
      rows.push({ ...run, ...(await burst(urls, run, index)) });
    }
  } finally {
    await stopAllChildren();
    await rm(folder, { recursive: true, force: true });
    const redis = new Redis(REDIS_URL, { protocol: 2 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.unlink(...keys);
    redis.disconnect();
  }
  return rows;
}

const checkouts = [{ name: 'this checkout', path: ROOT }];
if (options.baseline) checkouts.unshift({ name: 'baseline', path: resolve(options.baseline) });
const table = [];
for (const checkout of checkouts) {
  for (const row of await measure(checkout.path)) table.push({ build: checkout.name, ...row });
}
console.log(
  `\nBurst of simultaneous retry asks over two coordinators, healthy Redis, store timeout ${options['store-timeout-ms']} ms (budget limit ${LIMIT}):\n`,
);
console.log(
  'build          | connections       |    N | 200  | store_unavailable | overloaded | other | granted | counted by the budget',
);
for (const r of table) {
  const expected = Math.min(r.n, LIMIT);
  console.log(
    `${r.build.padEnd(14)} | ${r.label.padEnd(17)} | ${String(r.n).padStart(4)} | ${String(r.ok).padStart(4)} | ${String(
      r.storeUnavailable,
    ).padStart(17)} | ${String(r.overloaded).padStart(10)} | ${String(r.other).padStart(5)} | ${String(
      r.granted,
    ).padStart(7)} | ${r.counted} (limit ${expected})`,
  );
}
await mkdir(RESULTS, { recursive: true });
await writeFile(join(RESULTS, 'burst.json'), JSON.stringify(table, null, 2));
