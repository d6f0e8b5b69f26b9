// The retry storm: M caller processes, each with K calls that all fail at the same instant against a
// scripted dependency (503 during the storm), through the built SDK, against two built coordinators on
// one private Redis. Per configuration and in one run: per-call asking (coalesceRetryAsks: false)
// beside coalesced asks with held denials; then, per M, a steady phase in which every process calls
// a healthy dependency and reports at the SDK's interval: the reports received per second beside the
// record_outcomes script calls per second on that dependency's slot. Run with `npm run bench:storm`
// (builds dist/ first); `--processes 8,32 --calls 50,200 --caller-nice 19`. Results go to
// test/bench/results/storm-<time>.json (ignored).
import { fork, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  REPORT_INTERVAL_MS,
  commandLineValue,
  freePort,
  killAllChildrenNow,
  reportMergeIntervalMs,
  stopAllChildren,
  track,
  waitReady,
} from './support.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const NAMESPACE = 'storm';
const DECISION_TIMEOUT_MS = 50;
/** limit = floor(0 × requests + 5 × 10) = 50 retries for the whole fleet, whatever was reported. */
const POLICY = {
  retryBudget: { ratio: 0, minRetriesPerSecond: 5, windowSeconds: 10, maxAttempts: 2 },
  backoff: { baseMs: 1, capMs: 5, jitter: 'full' },
  breaker: { minimumCalls: 1_000_000 },
};
const MODES = [
  { name: 'per-call', coalesce: false },
  { name: 'coalesced', coalesce: true },
];
/**
 * The caller processes' CPU priority (nice value). In a deployment the callers run on their own
 * hosts; here up to 32 of them share 2 cores with the coordinators, Redis and the dependency, and at
 * an equal priority they take most of the CPU from the coordinators. At nice 19 they stand in for
 * callers elsewhere: the coordinators and Redis get the CPU they need, and the callers share what
 * is left (each still handles its own failures as slowly as that makes it). `--caller-nice 0`
 * shares the CPU evenly.
 */
const CALLER_NICE = 19;
const now = () => performance.timeOrigin + performance.now();
/** The header the scripted dependency stamps its 503s with: when it sent them (epoch ms). */
const FAILED_AT = 'x-failed-at';
/** The storm's first attempts that have not all come by then fail anyway, this long after the first (a starved machine). */
const RELEASE_AFTER_MS = 3000;

// ---------------------------------------------------------------------------------------------
// One caller process: a Sluice client per run, K calls at once on cue, what each ended with.

async function caller() {
  os.setPriority(Number(process.env.STORM_CALLER_NICE ?? 0));
  const require = createRequire(import.meta.url);
  const { Sluice, isGiveUpError } = require(join(ROOT, 'dist/libs/client/src/index.js'));
  process.on('message', async (message) => {
    if (message.type === 'steady') return steady(Sluice, message);
    if (message.type !== 'run') return;
    const { baseUrls, dependency, dependencyUrl, calls, coalesce } = message;
    const sluice = new Sluice({
      baseUrls,
      namespace: NAMESPACE,
      logger: false,
      decisionTimeoutMs: DECISION_TIMEOUT_MS,
      coalesceRetryAsks: coalesce,
      reportIntervalMs: REPORT_INTERVAL_MS,
    });
    const dep = sluice.dependency(dependency, { idempotent: true, maxAttempts: 2, hedge: false, timeoutMs: 5000 });
    /**
     * How long each retry decision took (ms): from the call's 503 (the dependency stamps when it
     * sent it) to the retry or the give-up. A call that gave up without a 503 (refused before any
     * attempt reached the dependency) had no retry decision to wait for.
     */
    const decisionMs = [];
    const sinceFailure = (error) => {
      const failedAt = Number(error?.response?.headers?.get(FAILED_AT));
      if (failedAt > 0) decisionMs.push(now() - failedAt);
    };
    dep.onRetry((event) => sinceFailure(event.error));
    dep.onGiveUp((event) => event.error.attempts === 1 && sinceFailure(event.error.lastError));
    // Warm: the dependency's view read, and the decision path with its connections (on a dependency
    // of its own, whose budget is not the storm's), before the storm.
    const warm = sluice.dependency(`${dependency}-warm`, { idempotent: true, maxAttempts: 2, hedge: false });
    await dep.fetch(`${dependencyUrl}/warm`).catch(() => undefined);
    for (let round = 0; round < 2; round++) {
      await Promise.all(
        Array.from({ length: calls }, (_, i) =>
          warm.fetch(`${dependencyUrl}/warm/${round}/${i}`).catch(() => undefined),
        ),
      );
    }
    await sleep(300);
    process.send({ type: 'ready' });
    await once(process, 'message');
    const ends = await Promise.all(
      Array.from({ length: calls }, (_, i) =>
        dep.fetch(`${dependencyUrl}/call/${i}`).then(
          () => 'ok',
          (error) => (isGiveUpError(error) ? error.reason : (error?.name ?? 'error')),
        ),
      ),
    );
    await sluice.close();
    process.send({ type: 'done', ends, decisionMs });
  });
  process.send({ type: 'up' });
}

/**
 * The steady phase of one caller: a call every `everyMs` for `ms` to a healthy dependency, so the
 * client reports at its own interval, as every pod of a fleet does.
 */
async function steady(Sluice, { baseUrls, dependency, dependencyUrl, ms, everyMs }) {
  const sluice = new Sluice({ baseUrls, namespace: NAMESPACE, logger: false, reportIntervalMs: REPORT_INTERVAL_MS });
  const dep = sluice.dependency(dependency, { idempotent: true });
  await dep.fetch(`${dependencyUrl}/ok`).then((response) => response.arrayBuffer());
  process.send({ type: 'ready' });
  await once(process, 'message');
  const calls = [];
  const endAt = Date.now() + ms;
  while (Date.now() < endAt) {
    // A call that fails (a busy machine's timeout) is not this phase's concern: reports count it.
    calls.push(
      dep.fetch(`${dependencyUrl}/ok`).then(
        (response) => response.arrayBuffer(),
        () => undefined,
      ),
    );
    await sleep(everyMs);
  }
  await Promise.allSettled(calls);
  await sluice.close();
  process.send({ type: 'done' });
}

// ---------------------------------------------------------------------------------------------
// The run.

function readOptions() {
  return {
    processes: commandLineValue('--processes', '8,32').split(',').map(Number),
    calls: commandLineValue('--calls', '50,200').split(',').map(Number),
    callerNice: Number(commandLineValue('--caller-nice', String(CALLER_NICE))),
  };
}

/** The scripted dependency: the storm's first attempts are held until all have come, then all answered 503. */
async function startDependency() {
  const state = {
    expected: Infinity,
    held: [],
    firstAttempts: 0,
    retries: 0,
    atOnce: 0,
    timer: undefined,
  };
  const fail = (res) => res.writeHead(503, { 'content-type': 'text/plain', [FAILED_AT]: String(now()) }).end('down');
  const server = createServer((req, res) => {
    if (req.url === '/warm' || req.url === '/ok') return res.end('ok');
    if (req.url.startsWith('/warm/')) return req.headers['sluice-attempt'] === '1' ? fail(res) : res.end('ok');
    if (!req.url.startsWith('/call/')) return fail(res);
    if (req.headers['sluice-attempt'] !== '1') {
      state.retries++;
      return fail(res);
    }
    state.firstAttempts++;
    state.held.push(res);
    if (state.held.length === 1) state.timer = setTimeout(release, RELEASE_AFTER_MS);
    if (state.held.length >= state.expected) release();
  });
  /** Every held first attempt fails now (all of the storm's, or those that came within RELEASE_AFTER_MS). */
  const release = () => {
    clearTimeout(state.timer);
    state.atOnce += state.held.length;
    state.held.splice(0).forEach(fail);
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    arm(expected) {
      Object.assign(state, { expected, held: [], firstAttempts: 0, retries: 0, atOnce: 0 });
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

async function startRedis() {
  const port = await freePort();
  const child = track(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'redis-server',
  );
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined); // while it starts
  for (let i = 0; i < 50; i++) {
    try {
      await client.connect();
      break;
    } catch {
      await sleep(100);
    }
  }
  return { url: `redis://127.0.0.1:${port}`, client, child };
}

/** Script calls Redis has run so far (EVAL, EVALSHA, FCALL and their read-only forms). */
async function scriptCalls(redis) {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):calls=(\d+)/gm)) {
    calls += Number(match[2]);
  }
  return calls;
}

async function startCoordinators(redisUrl, dependencies, dir) {
  const policiesFile = join(dir, 'policies.json');
  const dependencyPolicies = Object.fromEntries(dependencies.map((name) => [name, POLICY]));
  await writeFile(policiesFile, JSON.stringify({ namespaces: { [NAMESPACE]: { dependencies: dependencyPolicies } } }));
  const coordinators = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const child = track(
      spawn(process.execPath, ['dist/apps/coordinator/src/main.js'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          SLUICE_PORT: String(port),
          SLUICE_REDIS_URL: redisUrl,
          SLUICE_KEY_PREFIX: 'bench-storm:',
          SLUICE_POLICIES_FILE: policiesFile,
          SLUICE_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
      `coordinator-${i}`,
    );
    coordinators.push({ url: `http://127.0.0.1:${port}`, child });
  }
  await Promise.all(coordinators.map(({ url, child }) => waitReady(`${url}/health/ready`, child)));
  return coordinators.map(({ url }) => url);
}

/** The coordinators' HTTP requests for `dependency`'s decisions and in all, their 503s, and the grants. */
async function coordinatorCounts(urls, dependency) {
  const counts = {
    requests: 0,
    decisionRequests: 0,
    status503: 0,
    granted: 0,
    over50ms: 0,
    reports: 0,
    reportScripts: 0,
  };
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const line of text.split('\n')) {
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      const decisionRoute = /route="[^"]*\/(retry|retries)"/.test(line);
      if (decisionRoute && line.startsWith('sluice_http_request_duration_seconds_bucket{')) {
        if (line.includes('le="+Inf"')) counts.over50ms += value;
        if (line.includes('le="0.05"')) counts.over50ms -= value;
      }
      if (line.startsWith('sluice_http_request_duration_seconds_count{')) {
        const route = /route="([^"]*)"/.exec(line)?.[1] ?? '';
        if (route.startsWith('/metrics') || route.startsWith('/health')) continue;
        counts.requests += value;
        if (route.endsWith('/retry') || route.endsWith('/retries')) counts.decisionRequests += value;
        if (route.endsWith('/reports')) counts.reports += value;
        if (/(status|status_code|code)="503"/.test(line)) counts.status503 += value;
      }
      // Every record_outcomes call of the instance: in the steady phase, only its dependency reports.
      if (
        line.startsWith('sluice_store_operation_duration_seconds_count{') &&
        line.includes('operation="recordOutcomes"')
      ) {
        counts.reportScripts += value;
      }
      if (
        line.startsWith('sluice_retry_decisions_total{') &&
        line.includes(`dependency="${dependency}"`) &&
        line.includes('result="granted"')
      ) {
        counts.granted += value;
      }
    }
  }
  return counts;
}

function nextMessage(child, type) {
  return new Promise((resolve, reject) => {
    const onMessage = (message) => {
      if (message?.type !== type) return;
      child.off('exit', onExit);
      child.off('message', onMessage);
      resolve(message);
    };
    const onExit = () => reject(new Error(`${child.name} exited before '${type}':\n${child.output}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

const percentile = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN;

async function runOne({ callers, coordinators, redis, dependency, calls, mode }) {
  const failedCalls = callers.length * calls;
  dependency.server.arm(failedCalls);
  const name = stormName(mode, callers.length, calls);
  for (const child of callers) {
    child.send({
      type: 'run',
      baseUrls: coordinators,
      dependency: name,
      dependencyUrl: dependency.server.url,
      calls,
      coalesce: mode.coalesce,
    });
  }
  await Promise.all(callers.map((child) => nextMessage(child, 'ready')));
  const before = { ...(await coordinatorCounts(coordinators, name)), scripts: await scriptCalls(redis) };
  const done = callers.map((child) => nextMessage(child, 'done'));
  callers.forEach((child) => child.send({ type: 'go' }));
  const results = await Promise.all(done);
  await sleep(200); // the last reports land
  const after = { ...(await coordinatorCounts(coordinators, name)), scripts: await scriptCalls(redis) };
  const { retries, atOnce } = dependency.server.state;
  const latencies = results.flatMap((r) => r.decisionMs).sort((a, b) => a - b);
  const ends = results.flatMap((r) => r.ends);
  const byEnd = ends.reduce((n, end) => ({ ...n, [end]: (n[end] ?? 0) + 1 }), {});
  const grants = after.granted - before.granted;
  return {
    configuration: `${callers.length}×${calls}`,
    mode: mode.name,
    failedCalls,
    failedAtOnce: atOnce,
    decisionRequestsPerCall: (after.decisionRequests - before.decisionRequests) / failedCalls,
    coordinatorRequestsPerCall: (after.requests - before.requests) / failedCalls,
    scriptCallsPerCall: (after.scripts - before.scripts) / failedCalls,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    late: byEnd.coordinator_unavailable ?? 0,
    status503: after.status503 - before.status503,
    coordinatorOver50ms: after.over50ms - before.over50ms,
    grants,
    limit: POLICY.retryBudget.minRetriesPerSecond * POLICY.retryBudget.windowSeconds,
    retriesReceived: retries,
    ends: byEnd,
  };
}

/** How long the steady phase runs, and how often each caller calls meanwhile. */
const STEADY_MS = 4000;
const STEADY_EVERY_MS = 20;

/**
 * The steady phase: every caller calls a healthy dependency and reports at the SDK's interval; the
 * reports the coordinators receive per second beside the record_outcomes script calls per second
 * they make on the dependency's slot (one per report without merging).
 */
async function runSteady({ callers, coordinators, dependency }) {
  const name = `steady-${callers.length}`;
  for (const child of callers) {
    child.send({
      type: 'steady',
      baseUrls: coordinators,
      dependency: name,
      dependencyUrl: dependency.server.url,
      ms: STEADY_MS,
      everyMs: STEADY_EVERY_MS,
    });
  }
  await Promise.all(callers.map((child) => nextMessage(child, 'ready')));
  await sleep(300); // the warm-up's reports land
  const done = callers.map((child) => nextMessage(child, 'done'));
  callers.forEach((child) => child.send({ type: 'go' }));
  // The middle of the phase: every caller is calling and reporting.
  await sleep(1000);
  const before = await coordinatorCounts(coordinators, name);
  const startedAt = performance.now();
  await sleep(STEADY_MS - 2000);
  const after = await coordinatorCounts(coordinators, name);
  const seconds = (performance.now() - startedAt) / 1000;
  await Promise.all(done);
  return {
    processes: callers.length,
    reportsPerSecond: (after.reports - before.reports) / seconds,
    scriptsPerSecond: (after.reportScripts - before.reportScripts) / seconds,
    bound: coordinators.length * (1000 / reportMergeIntervalMs()),
  };
}

function printSteady(rows) {
  console.log(
    `\nSteady reporting: each process calls every ${STEADY_EVERY_MS} ms and reports every ${REPORT_INTERVAL_MS} ms (the SDK's default); ` +
      'per second, over the middle of the phase:',
  );
  const header = [
    'processes',
    'reports received',
    'record_outcomes calls on the slot',
    `bound (${2} instances × 1 per ${reportMergeIntervalMs()} ms)`,
  ];
  const cells = [
    header,
    ...rows.map((r) => [
      String(r.processes),
      r.reportsPerSecond.toFixed(0),
      r.scriptsPerSecond.toFixed(0),
      String(r.bound),
    ]),
  ];
  const widths = header.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  for (const line of cells) console.log(line.map((cell, i) => cell.padStart(widths[i])).join('  '));
  console.log('(without merging, each report is one record_outcomes call on the slot: the middle column)');
}

/** The dependency of one storm: its own budget, whatever ran before. */
const stormName = (mode, processes, calls) => `${mode.name}-${processes}x${calls}`;

function printTable(rows) {
  const columns = [
    ['config', (r) => r.configuration],
    ['asking', (r) => r.mode],
    ['failed at once', (r) => `${r.failedAtOnce}/${r.failedCalls}`],
    ['decision req/call', (r) => r.decisionRequestsPerCall.toFixed(3)],
    ['coord req/call', (r) => r.coordinatorRequestsPerCall.toFixed(3)],
    ['coord req', (r) => String(Math.round(r.coordinatorRequestsPerCall * r.failedCalls))],
    ['redis scripts/call', (r) => r.scriptCallsPerCall.toFixed(3)],
    ['p50 ms', (r) => r.p50Ms.toFixed(1)],
    ['p99 ms', (r) => r.p99Ms.toFixed(1)],
    ['late', (r) => String(r.late)],
    ['coord >50ms', (r) => String(r.coordinatorOver50ms)],
    ['503s', (r) => String(r.status503)],
    ['grants/limit', (r) => `${r.grants}/${r.limit}`],
    ['retries recv/grants', (r) => `${r.retriesReceived}/${r.grants}`],
  ];
  const cells = [columns.map(([title]) => title), ...rows.map((row) => columns.map(([, cell]) => cell(row)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  for (const line of cells) console.log(line.map((cell, i) => cell.padStart(widths[i])).join('  '));
}

async function main() {
  const options = readOptions();
  const startedAt = Date.now();
  const dir = await mkdtemp(join(os.tmpdir(), 'sluice-storm-'));
  const stop = () => killAllChildrenNow();
  process.on('exit', stop);
  const dependency = { server: await startDependency() };
  const redis = await startRedis();
  const rows = [];
  const steadyRows = [];
  try {
    const names = options.processes.flatMap((m) =>
      options.calls.flatMap((k) => MODES.map((mode) => stormName(mode, m, k))),
    );
    const coordinators = await startCoordinators(redis.url, names, dir);
    for (const processes of options.processes) {
      const callers = Array.from({ length: processes }, (_, i) =>
        track(
          fork(fileURLToPath(import.meta.url), ['--caller'], {
            cwd: ROOT,
            env: { ...process.env, STORM_CALLER_NICE: String(options.callerNice) },
            stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
          }),
          `caller-${i}`,
        ),
      );
      await Promise.all(callers.map((child) => nextMessage(child, 'up')));
      for (const mode of MODES) {
        for (const calls of options.calls) {
          rows.push(await runOne({ callers, coordinators, redis: redis.client, dependency, calls, mode }));
        }
      }
      steadyRows.push(await runSteady({ callers, coordinators, dependency }));
      callers.forEach((child) => child.kill('SIGTERM'));
      await Promise.all(callers.map((child) => child.exited));
    }
  } finally {
    redis.client.disconnect();
    await dependency.server.close();
    await stopAllChildren();
    await rm(dir, { recursive: true, force: true });
  }
  printTable(rows);
  printSteady(steadyRows);
  console.log(
    `(${((Date.now() - startedAt) / 1000).toFixed(1)} s; decision latency from each call's 503 to its retry or give-up; ` +
      `caller processes at nice ${options.callerNice}, ${os.cpus().length} cores)`,
  );
  const results = join(HERE, 'results');
  await mkdir(results, { recursive: true });
  const file = join(results, `storm-${new Date(startedAt).toISOString().replaceAll(':', '-')}.json`);
  await writeFile(file, JSON.stringify({ options, policy: POLICY, rows, steady: steadyRows }, null, 2));
  console.log(`results: ${file}`);
}

if (process.argv[2] === '--caller') await caller();
else await main();
