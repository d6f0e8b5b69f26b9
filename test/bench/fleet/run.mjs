// The fleet simulation: retry amplification and recovery on a real HTTP dependency, per strategy,
// side by side. For each part (the outage scenario with and without breakers, the metastable
// scenario), each fleet size N and each strategy in turn: the same scripted dependency, N caller
// processes sending the same offered load, and, for the sluice strategies, two coordinator
// instances on one Redis. Prints the tables, writes the raw per-100 ms series as JSON and the
// outage scenario's charts as SVG. Run with `npm run bench:fleet` (builds dist/ first);
// `npm run bench:fleet -- --help` lists the options.
import { fork, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { TOLERANCE, checks, figures, notes, summary, table } from './analyse.mjs';
import {
  childProcesses,
  killAllChildrenNow,
  stopAllChildren,
  stopChild,
  freePort,
  track,
  waitReady,
} from '../support.mjs';
import { renderChart } from './chart.mjs';
import {
  CALL_DEADLINE_MS,
  DEPENDENCY,
  METASTABLE,
  USAGE,
  isSluice,
  metastableCapacityRps,
  readOptions,
  runPolicy,
  scenarioMs,
} from './scenario.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../../..');
const PREFIX = `sluice-fleet-${process.pid}-${Date.now().toString(36)}`;
const startedAt = Date.now();

let options;
try {
  options = readOptions();
} catch (error) {
  console.error(`${error.message}\n\n${USAGE}`);
  process.exit(64);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}
const outDir = options.outDir ?? join(HERE, 'results');

/**
 * The parts of a run: the outage scenario with the breakers on and with them off (only the budgets
 * act), and the metastable scenario (with the breakers of the first setting asked for).
 */
const PARTS = [
  ...(options.scenarios.includes('outage')
    ? options.breakers.map((breakers) => ({
        name: breakers ? 'outage' : 'outage, breakers off',
        scenario: 'outage',
        breakers,
        policy: options.policy,
        phases: options.phases,
        // The charts the docs show are tracked: a run writes over one only when --chart names it.
        chart: join(outDir, breakers ? 'fleet.svg' : 'fleet-budgets.svg'),
      }))
    : []),
  ...(options.scenarios.includes('metastable')
    ? [
        {
          name: 'metastable',
          scenario: 'metastable',
          breakers: options.breakers[0],
          policy: options.policy,
          phases: options.metastablePhases,
        },
      ]
    : []),
];
if (options.chart && PARTS[0].chart) PARTS[0].chart = options.chart;

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked, and none outlives the benchmark.

/** The inherited environment without SLUICE_* variables, so only ours apply. */
function cleanEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  return { ...env, ...extra };
}

function forkChild(file, args, name) {
  const child = fork(join(HERE, file), args, { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  return track(child, name);
}

/** The next message of `type` from `child`; fails if the child exits first or the time runs out. */
function nextMessage(child, type, timeoutMs) {
  return new Promise((resolve, reject) => {
    const done = (fn, value) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      fn(value);
    };
    const onMessage = (message) => message?.type === type && done(resolve, message);
    const onExit = (code, signal) =>
      done(reject, new Error(`${child.name} exited (${code ?? signal}) before '${type}':\n${child.output.trim()}`));
    const timer = setTimeout(
      () => done(reject, new Error(`${child.name}: no '${type}' within ${timeoutMs} ms:\n${child.output.trim()}`)),
      timeoutMs,
    );
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

// ---------------------------------------------------------------------------------------------
// The coordinators: two instances of the built service, one Redis, one key prefix.

let policiesDir;
let redisUsed = false;

/** `runs`: the sluice runs of the plan, each with its namespace and policy. */
async function startCoordinators(runs) {
  policiesDir = await mkdtemp(join(os.tmpdir(), 'sluice-fleet-'));
  const policiesFile = join(policiesDir, 'policies.json');
  const document = {
    namespaces: Object.fromEntries(runs.map((run) => [run.namespace, { dependencies: { [DEPENDENCY]: run.policy } }])),
  };
  await writeFile(policiesFile, JSON.stringify(document, null, 2));
  redisUsed = true;
  const urls = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const child = track(
      spawn(process.execPath, ['dist/apps/coordinator/src/main.js'], {
        cwd: ROOT,
        env: cleanEnv({
          SLUICE_PORT: String(port),
          SLUICE_REDIS_URL: options.redisUrl,
          SLUICE_KEY_PREFIX: PREFIX,
          SLUICE_POLICIES_FILE: policiesFile,
          SLUICE_LOG_LEVEL: 'warn',
          ...(options.storeTimeoutMs ? { SLUICE_STORE_TIMEOUT_MS: String(options.storeTimeoutMs) } : {}),
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
      `coordinator-${i}`,
    );
    urls.push({ url: `http://127.0.0.1:${port}`, child });
  }
  // A busy machine can take a while to boot two services.
  await Promise.all(urls.map(({ url, child }) => waitReady(`${url}/health/ready`, child, 60_000)));
  return urls.map(({ url }) => url);
}

/**
 * HTTP requests the coordinators have served, by method and route (their own /metrics and /health
 * left out), and the retry decisions that took them longer than 50 ms (the SDK's decision timeout).
 */
async function coordinatorRequests(urls) {
  const routes = {};
  const decisions = {};
  let slowRetries = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const line of text.split('\n')) {
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      const route = /route="([^"]*)"/.exec(line)?.[1] ?? '?';
      if (line.startsWith('sluice_http_request_duration_seconds_bucket{') && route.endsWith('/retry')) {
        const le = /le="([^"]*)"/.exec(line)?.[1];
        if (le === '+Inf') slowRetries += value;
        if (le === '0.05') slowRetries -= value;
      }
      if (line.startsWith('sluice_retry_decisions_total{')) {
        const result = /result="([^"]*)"/.exec(line)?.[1] ?? '?';
        decisions[result] = (decisions[result] ?? 0) + value;
      }
      if (!line.startsWith('sluice_http_request_duration_seconds_count{')) continue;
      if (route.startsWith('/metrics') || route.startsWith('/health')) continue;
      const key = `${/method="([^"]*)"/.exec(line)?.[1] ?? '?'} ${route}`;
      routes[key] = (routes[key] ?? 0) + value;
    }
  }
  return { routes, decisions, slowRetries };
}

function difference(after, before) {
  const byRoute = {};
  let total = 0;
  for (const [route, count] of Object.entries(after.routes)) {
    const delta = count - (before.routes[route] ?? 0);
    if (delta > 0) {
      byRoute[route] = delta;
      total += delta;
    }
  }
  const decisions = {};
  for (const [result, count] of Object.entries(after.decisions)) {
    if (count - (before.decisions[result] ?? 0) > 0) decisions[result] = count - (before.decisions[result] ?? 0);
  }
  return { total, byRoute, decisions, retryDecisionsOver50ms: after.slowRetries - before.slowRetries };
}

/** Follows the dependency's breaker over the coordinator's event stream; `close()` returns its transitions. */
async function observeBreaker(url, namespace) {
  const controller = new AbortController();
  const transitions = [];
  const response = await fetch(`${url}/v1/${namespace}/events?deps=${DEPENDENCY}`, {
    headers: { accept: 'text/event-stream' },
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`event stream of ${url}: ${response.status}`);
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: ?(.*)$/m.exec(frame)?.[1];
          if (/^event: ?breaker$/m.test(frame) && data)
            transitions.push({ at: Date.now(), state: JSON.parse(data).state });
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    async close() {
      controller.abort();
      await reading;
      return transitions;
    },
  };
}

/**
 * Visits every key of this run's prefix (and only those) in the shared Redis, deleting them when
 * `remove` is set; returns how many there were.
 */
async function redisKeys({ remove }) {
  if (!redisUsed) return 0;
  const redis = new Redis(options.redisUrl, { protocol: 2, lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  let found = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
      if (keys.length > 0) found += remove ? await redis.del(...keys) : keys.length;
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Clean-up: on success, error, SIGINT or SIGTERM, every child stops and our Redis keys go.

let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    await stopAllChildren();
    try {
      const deleted = await redisKeys({ remove: true });
      if (deleted > 0) process.stderr.write(`deleted ${deleted} Redis keys under ${PREFIX}:\n`);
    } catch (error) {
      process.stderr.write(`could not delete the Redis keys under ${PREFIX}: (${error.message})\n`);
    }
    if (policiesDir) await rm(policiesDir, { recursive: true, force: true });
  })();
  return cleaning;
}
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping every process this benchmark started\n`);
    void cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', () => {
  killAllChildrenNow();
});

// ---------------------------------------------------------------------------------------------
// One run: one strategy, one fleet size.

/** One run; a run that fails stops the callers it started, and the benchmark goes on to the next. */
async function runOne(step, dependency, coordinatorUrls, deadUrl) {
  const callers = [];
  try {
    return await runWith(step, dependency, coordinatorUrls, deadUrl, callers);
  } catch (error) {
    await Promise.all(callers.map((caller) => stopChild(caller, 1000)));
    // The dependency may still be counting this run: the next start replaces it.
    throw error;
  }
}

async function runWith({ part, n, strategy, namespace, policy }, dependency, coordinatorUrls, deadUrl, callers) {
  const { scenario, phases } = part;
  const rate =
    scenario === 'metastable'
      ? (METASTABLE.load * metastableCapacityRps()) / n
      : (options.ratePerCaller ?? options.totalRps / n);
  const interval = 1000 / rate;
  const lengthMs = scenarioMs(phases);
  for (let id = 0; id < n; id++) {
    const config = {
      id: String(id),
      strategy,
      dependencyUrl: dependency.url,
      coordinatorUrls: isSluice(strategy)
        ? id % 2 === 0
          ? coordinatorUrls
          : [...coordinatorUrls].reverse()
        : [deadUrl],
      namespace,
      decisionTimeoutMs: options.decisionTimeoutMs,
      policy,
      phases,
      rate,
      // Callers are staggered within one interval, so the fleet's load is even.
      offsetMs: (id * interval) / n,
      nice: options.callerNice,
    };
    callers.push(forkChild('caller.mjs', [JSON.stringify(config)], `caller-${id}`));
  }
  // On a busy machine N callers can take a while to load the SDK and settle.
  await Promise.all(callers.map((caller) => nextMessage(caller, 'ready', 90_000)));
  // The fleet breaker's transitions, as the coordinator pushes them (this stream is not counted:
  // it ends after the coordinators' counts are read).
  const observer = isSluice(strategy) ? await observeBreaker(coordinatorUrls[1], namespace) : null;
  const before = isSluice(strategy) ? await coordinatorRequests(coordinatorUrls) : null;

  const t0 = Date.now() + 500;
  dependency.child.send({
    type: 'start',
    t0,
    scenario,
    phases,
    brownoutRate: options.brownoutRate,
    retryAfterSeconds: options.retryAfterSeconds,
    latencyMs: options.latencyMs,
  });
  await nextMessage(dependency.child, 'started', 5000);
  // A caller starved of CPU falls behind its schedule: it gets time to finish (the check on the
  // callers' event loop delay says whether the run counts).
  const results = callers.map((caller) => nextMessage(caller, 'result', 3 * lengthMs + CALL_DEADLINE_MS + 60_000));
  for (const caller of callers) caller.send({ type: 'start', t0 });
  const callerResults = await Promise.all(results);

  // The callers close (the SDK sends its last report and ends its stream), then the counts are read.
  for (const caller of callers) caller.send({ type: 'stop' });
  await Promise.all(callers.map((caller) => Promise.race([caller.exited, sleep(5000)])));
  await Promise.all(callers.map((caller) => stopChild(caller, 1000)));
  const coordinator = before ? difference(await coordinatorRequests(coordinatorUrls), before) : null;
  dependency.child.send({ type: 'collect' });
  const { counts } = await nextMessage(dependency.child, 'counts', 5000);
  const fleetBreaker = observer ? (await observer.close()).map(({ at, state }) => [at - t0, state]) : null;
  return {
    part: part.name,
    scenario,
    breakers: part.breakers,
    strategy,
    n,
    rate,
    phases,
    policy,
    callers: callerResults,
    dependency: counts,
    coordinator,
    fleetBreaker,
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const plan = [];
  PARTS.forEach((part, p) => {
    options.fleetSizes.forEach((n) => {
      for (const strategy of options.strategies) {
        plan.push({ part, n, strategy, namespace: `fleet-${p}-n${n}-${strategy}`, policy: runPolicy(part, strategy) });
      }
    });
  });
  const totalS = plan.reduce((total, step) => total + scenarioMs(step.part.phases) / 1000, 0);
  process.stderr.write(
    `fleet simulation: ${plan.length} runs, ${totalS} s of scenarios (` +
      PARTS.map((part) => `${part.name}: phases ${JSON.stringify(part.phases)}`).join('; ') +
      `), ${options.ratePerCaller ? `${options.ratePerCaller} requests/s per caller` : `${options.totalRps} requests/s offered by each fleet`} ` +
      `in the outage scenario, ${METASTABLE.load * metastableCapacityRps()} in the metastable one (capacity ${metastableCapacityRps()}/s)\n`,
  );

  const dependencyChild = forkChild('dependency.mjs', [], 'dependency');
  const { port } = await nextMessage(dependencyChild, 'ready', 10_000);
  const dependency = { child: dependencyChild, url: `http://127.0.0.1:${port}` };
  const sluiceRuns = plan.filter((step) => isSluice(step.strategy));
  const coordinatorUrls = sluiceRuns.length > 0 ? await startCoordinators(sluiceRuns) : [];
  // Nothing listens here: the local-budget callers' SDK finds no coordinator and decides locally.
  const deadUrl = `http://127.0.0.1:${await freePort()}`;

  const runs = [];
  const failedRuns = [];
  for (const step of plan) {
    const begun = Date.now();
    process.stderr.write(`${step.part.name} N=${step.n} ${step.strategy}: `);
    let run;
    try {
      run = await runOne(step, dependency, coordinatorUrls, deadUrl);
    } catch (error) {
      if (interrupted) throw error;
      process.stderr.write(`failed: ${error.message.split('\n')[0]}\n`);
      failedRuns.push({
        part: step.part.name,
        n: step.n,
        strategy: step.strategy,
        error: error.message.split('\n')[0],
      });
      continue;
    }
    run.figures = figures(run);
    runs.push(run);
    const f = run.figures;
    process.stderr.write(
      (run.scenario === 'metastable'
        ? `recovered ${f.recoveryMs === null ? 'never' : `${(f.recoveryMs / 1000).toFixed(1)} s`} after the trigger, ` +
          `goodput/s ${f.goodputPerSecond.map((g) => Math.round(g * 100)).join(' ')}, peak queue ${f.peakQueue}`
        : `outage ×${f.amplificationOutage.toFixed(2)}, brown-out ×${f.amplificationBrownout.toFixed(2)}, ` +
          `success ${(f.successBrownout * 100).toFixed(1)} %, ${f.probes} probes, closed ${f.closeAfterOutageMs ?? '—'} ms after the outage`) +
        `, caller loop delay p99 ${f.callerLoopDelayP99Ms} ms (${((Date.now() - begun) / 1000).toFixed(1)} s)\n`,
    );
  }

  await mkdir(outDir, { recursive: true });
  const stamp = new Date(startedAt).toISOString().replace(/[:.]/g, '-');
  const jsonFile = join(outDir, `fleet-${stamp}.json`);
  await writeFile(
    jsonFile,
    JSON.stringify(
      {
        startedAt: new Date(startedAt).toISOString(),
        options,
        metastable: METASTABLE,
        binMs: 100,
        host: { cpus: os.cpus().length, node: process.version },
        runs: runs.map(
          ({
            part,
            scenario,
            strategy,
            n,
            rate,
            phases,
            policy,
            figures: f,
            dependency: d,
            callers,
            coordinator,
            fleetBreaker,
          }) => ({
            part,
            scenario,
            strategy,
            n,
            ratePerCaller: rate,
            phases,
            policy,
            figures: f,
            dependency: d,
            callers: callers.map(({ id, calls, seen, loopDelayP99Ms }) => ({ id, calls, seen, loopDelayP99Ms })),
            coordinator,
            fleetBreaker,
          }),
        ),
      },
      null,
      1,
    ),
  );
  const charts = [];
  for (const part of PARTS.filter((p) => p.chart)) {
    const partRuns = runs.filter((run) => run.part === part.name);
    const svg = renderChart(
      partRuns.map((run) => ({ strategy: run.strategy, n: run.n, received: run.dependency.received })),
      {
        phases: part.phases,
        offeredRps: Object.fromEntries(partRuns.map((run) => [run.n, Math.round(run.rate * run.n)])),
        title: part.breakers
          ? 'Requests received by the dependency per second (100 ms bins)'
          : 'Requests received by the dependency per second (100 ms bins), breakers off: budgets only',
      },
    );
    await mkdir(dirname(part.chart), { recursive: true });
    await writeFile(part.chart, svg);
    charts.push(part.chart);
  }

  await cleanup();
  const results = [];
  const lines = [''];
  for (const part of PARTS) {
    const partRuns = runs.filter((run) => run.part === part.name);
    const rows = partRuns.map((run) => run.figures);
    results.push(...checks(part, rows, options.brownoutRate));
    lines.push(
      `${part.name} (phases ${JSON.stringify(part.phases)}):`,
      '',
      table(part, rows),
      '',
      ...notes(partRuns),
      '',
    );
  }
  lines.push('Summary:', '', summary(runs), '');
  for (const failed of failedRuns) {
    results.push({
      ok: false,
      text: `${failed.part}, ${failed.strategy} N=${failed.n}: the run failed (${failed.error})`,
    });
  }
  // What the clean-up left: no process this benchmark started, no key under its prefix.
  const { started, running } = childProcesses();
  const keysLeft = await redisKeys({ remove: false });
  results.push({
    ok: running.length === 0 && keysLeft === 0,
    text:
      `clean-up: ${started - running.length} of the ${started} processes started have exited` +
      (running.length > 0 ? ` (still running: ${running.join(', ')})` : '') +
      `; ${keysLeft} Redis keys left under ${PREFIX}:`,
  });
  const policy = runPolicy({ breakers: true, policy: options.policy }, 'sluice-adaptive');
  lines.push(
    `Policy: retryBudget ${JSON.stringify(policy.retryBudget)} (mode fixed for sluice-fixed), breaker ${JSON.stringify(policy.breaker)} (minimumCalls 1000000 with the breakers off).`,
    `Amplification: requests received ÷ first attempts offered, per phase. Tolerance: ${TOLERANCE}.`,
    `Callers at nice ${options.callerNice} (--caller-nice), ${os.availableParallelism()} cores.`,
    '',
    ...results.map((result) => `${result.shown ? 'shown ' : result.ok ? 'holds ' : 'FAILS '} ${result.text}`),
    '',
    `raw series: ${relative(process.cwd(), jsonFile)}`,
    ...charts.map((chart) => `chart:      ${relative(process.cwd(), chart)}`),
    `wall time:  ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
  );
  console.log(lines.join('\n'));
  if (results.some((result) => !result.ok)) process.exitCode = 1;
}

main().catch(async (error) => {
  if (!interrupted) console.error(error);
  await cleanup();
  process.exit(1);
});
