// Retry-decision throughput: the coordinator against a bare node:http server running the same
// decide_retry script, and against redis-benchmark calling that script directly; then the
// coordinator's batched path (POST /v1/{ns}/retries, BATCH_SIZE asks for one dependency a request,
// decided by decide_retries-N.lua in one script call), in decisions per second beside them.
// The HTTP contenders run side by side: all started once, then measured in turn for ROUNDS rounds,
// each row the median round, so a noisy minute on a shared machine moves every contender alike.
// Then the single-decision endpoint and the bare server at a fixed rate, for their latency unsaturated:
// evenly paced (paced-load.mjs) and, for comparison, at autocannon's rate (a per-second quota).
// Beside them, each server's heap over its rounds (heap-probe.mjs, preloaded into it): bytes
// allocated per decision, scavenges per second; and the paced p99 over the baseline's.
// `--node-lines` repeats a shorter run (one round of each) for the coordinator and the baseline on
// every other supported Node.js line.
// Run with `npm run bench:decisions [-- --rounds N --fixed-rate R --node-lines]` (builds dist/
// first). Output: test/bench/results/ only.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  freePort,
  httpLoad,
  killAllChildrenNow,
  redisBenchmark,
  startChild,
  stopAllChildren,
  stopChild,
  commandLineValue,
  waitReady,
} from './support.mjs';
import { pacedLoad } from './paced-load.mjs';
import { currentLine, nodeLines } from '../support/node-lines.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { loadScript } = require(join(ROOT, 'dist/libs/store/src/redis/scripts.js'));

const REDIS_HOST = '127.0.0.1';
const REDIS_PORT = 6379;
const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}`;
const CONNECTIONS = 32;
const WARMUP_SECONDS = 2;
/** Seconds of one measured round; each HTTP contender gets ROUNDS of them, in turn with the others. */
const LOAD_SECONDS = 5;
const ROUNDS = Number(commandLineValue('--rounds', '3'));
/**
 * Requests per second of the fixed-rate rounds: the single-decision endpoint and the bare server
 * offered the same load below either's capacity, over the same connections, for the latency a
 * caller sees when the server is not saturated (at saturation, latency is mostly the queue of 32
 * connections). About half what the coordinator serves saturated on 2 cores shared with Redis and
 * the load generator. `--fixed-rate 0` skips them.
 */
const FIXED_RATE = Number(commandLineValue('--fixed-rate', '3000'));
/** The contenders measured at FIXED_RATE too. */
const FIXED_RATE_CONTENDERS = new Set(['coordinator', 'baseline']);
/**
 * The two ways of offering FIXED_RATE: evenly paced (paced-load.mjs: each request due at its
 * time, its latency counted from then), and autocannon's rate (a quota per connection per second:
 * a burst at full speed, then idle to the next second), which saturates the server for part of
 * every second.
 */
const FIXED_RATE_LOADS = {
  paced: pacedLoad,
  'autocannon quota': (baseUrl, { rate, ...options }) => httpLoad(baseUrl, { ...options, overallRate: rate }),
};
const NAMESPACE = 'bench';
const DEPENDENCIES = ['payments', 'search', 'inventory', 'profile'];
/**
 * Generous enough that every decision is a grant and the script takes its write path; the default
 * 10 s window, so buckets age out during the run as they do in production.
 */
const BUDGET = { ratio: 1, minRetriesPerSecond: 100_000, windowSeconds: 10 };
const BODY = JSON.stringify({ attempt: 1, idempotent: true });
/** Asks per batched request: what one process's coalesced failures of one dependency look like. */
const BATCH_SIZE = 50;
const PREFIX = `sluice-bench-${process.pid}-${Date.now().toString(36)}`;

const requests = DEPENDENCIES.map((dependency) => ({
  method: 'POST',
  path: `/v1/${NAMESPACE}/deps/${dependency}/retry`,
  headers: { 'content-type': 'application/json' },
  body: BODY,
}));

/** One batch per dependency: BATCH_SIZE asks for it, in one request. */
const batchRequests = DEPENDENCIES.map((dependency) => ({
  method: 'POST',
  path: `/v1/${NAMESPACE}/retries`,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    asks: Array.from({ length: BATCH_SIZE }, () => ({ dep: dependency, attempt: 1, idempotent: true })),
  }),
}));

/**
 * Dependencies the reports are spread over. An instance makes at most one record_outcomes call per
 * dependency per 100 ms, and answers a report once its call is made: reports of a few dependencies
 * would measure that interval, not the instance. Spread over this many, each dependency's report
 * mostly comes after a quiet interval and is written at once (a call per report), so the row
 * measures what a report costs the instance, merging aside.
 */
const REPORTED_DEPENDENCIES = 900;

/** One report per request, for one dependency, from one of 64 reporters: what a pod's flush looks like. */
const reportRequests = Array.from({ length: REPORTED_DEPENDENCIES }, (_, i) => ({
  method: 'POST',
  path: `/v1/${NAMESPACE}/reports`,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    reporter: `pod-${i % 64}`,
    deps: [{ dep: `reported-${i}`, requests: 20, successes: 20, failures: 0, slow: 0 }],
  }),
}));

/** Checks one request by hand, so the load below measures grants and not errors. */
async function expectGrant(baseUrl, [first]) {
  const response = await fetch(baseUrl + first.path, { method: 'POST', headers: first.headers, body: first.body });
  const answer = await response.json();
  if (answer.deps && response.status === 200) return; // a report: nothing to grant
  const reasons = answer.decisions ? answer.decisions.map((decision) => decision.reason) : [answer.reason];
  if (response.status !== 200 || reasons.some((reason) => reason !== 'granted')) {
    throw new Error(`expected granted decisions from ${baseUrl}, got ${response.status} ${JSON.stringify(answer)}`);
  }
}

/** The Node.js binary the servers run on (`--node-lines` changes it per line). */
let serverNode = process.execPath;

/**
 * Starts a server, with heap-probe.mjs preloaded, waits for it and checks one answer; the caller
 * measures it and stops it.
 */
async function startHttp(name, { args, env, load = requests }) {
  const port = await freePort();
  const probePort = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = startChild(serverNode, ['--import', './test/bench/heap-probe.mjs', ...args(port)], {
    cwd: ROOT,
    env: { ...cleanEnv(), ...env(port), BENCH_PROBE_PORT: String(probePort) },
  });
  try {
    await waitReady(`${baseUrl}/health/ready`, child);
    await expectGrant(baseUrl, load);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return {
    name,
    baseUrl,
    probeUrl: `http://127.0.0.1:${probePort}/`,
    child,
    load,
    rounds: [],
    heap: [],
    pacedHeap: [],
  };
}

/** The server's heap since the previous call (heap-probe.mjs). */
async function heapSince(server) {
  const response = await fetch(server.probeUrl);
  return response.json();
}

/** One load on `server`, and its heap over that load, kept in `server.heap` with the decisions made. */
async function withHeap(server, load, into = server.heap) {
  await heapSince(server);
  const result = await load();
  const heap = await heapSince(server);
  into.push({ ...heap, decisions: result.total * (DECISIONS_PER_REQUEST[server.name] ?? 1) });
  return result;
}

/** Decisions per request, where not one; a report decides nothing (its heap is per report). */
const DECISIONS_PER_REQUEST = { 'coordinator-batched': BATCH_SIZE };

/** The heap over a server's measured rounds: bytes allocated per decision (or report), scavenges/s, GC ms/s. */
function heapSummary(heap) {
  const sum = (key) => heap.reduce((total, round) => total + round[key], 0);
  const seconds = sum('seconds');
  return {
    bytesPerDecision: sum('allocatedBytes') / sum('decisions'),
    scavengesPerSecond: sum('scavenges') / seconds,
    markCompacts: sum('markCompacts'),
    gcMsPerSecond: sum('gcMs') / seconds,
    allocationCounter: heap[0]?.allocationCounter,
  };
}

/**
 * Warms every server up, then measures them in turn, ROUNDS times over; each server idles while
 * another is measured. A contender's result is its median round by requests/s.
 */
async function measureInTurn(servers, rounds = ROUNDS) {
  for (const server of servers) {
    process.stdout.write(`${server.name}: warming up ${WARMUP_SECONDS} s\n`);
    await httpLoad(server.baseUrl, {
      requests: server.load,
      connections: CONNECTIONS,
      durationSeconds: WARMUP_SECONDS,
    });
  }
  for (let round = 1; round <= rounds; round++) {
    for (const server of servers) {
      process.stdout.write(`round ${round}/${rounds}: ${server.name}, ${LOAD_SECONDS} s\n`);
      server.rounds.push(
        await withHeap(server, () =>
          httpLoad(server.baseUrl, {
            requests: server.load,
            connections: CONNECTIONS,
            durationSeconds: LOAD_SECONDS,
          }),
        ),
      );
    }
  }
  // name → pacing → rounds at FIXED_RATE
  const fixedRate = new Map();
  for (let round = 1; FIXED_RATE > 0 && round <= rounds; round++) {
    for (const server of servers.filter(({ name }) => FIXED_RATE_CONTENDERS.has(name))) {
      for (const [pacing, load] of Object.entries(FIXED_RATE_LOADS)) {
        process.stdout.write(
          `round ${round}/${rounds} at ${FIXED_RATE}/s (${pacing}): ${server.name}, ${LOAD_SECONDS} s\n`,
        );
        const result = await withHeap(
          server,
          () =>
            load(server.baseUrl, {
              requests: server.load,
              connections: CONNECTIONS,
              durationSeconds: LOAD_SECONDS,
              rate: FIXED_RATE,
            }),
          pacing === 'paced' ? server.pacedHeap : [],
        );
        const byPacing = fixedRate.get(server.name) ?? {};
        (byPacing[pacing] ??= []).push(result);
        fixedRate.set(server.name, byPacing);
      }
    }
  }
  const medianByP99 = (rounds) => ({
    ...[...rounds].sort((a, b) => a.p99Ms - b.p99Ms)[Math.floor(rounds.length / 2)],
    rate: FIXED_RATE,
  });
  return servers.map((server) => {
    const sorted = [...server.rounds].sort((a, b) => a.rps - b.rps);
    const atRate = fixedRate.get(server.name);
    return {
      ...sorted[Math.floor(sorted.length / 2)],
      roundsRps: server.rounds.map((r) => Math.round(r.rps)),
      heap: heapSummary(server.heap),
      ...(server.pacedHeap.length > 0 ? { pacedHeap: heapSummary(server.pacedHeap) } : {}),
      ...(atRate
        ? {
            fixedRate: Object.fromEntries(
              Object.entries(atRate).map(([pacing, rounds]) => [pacing, medianByP99(rounds)]),
            ),
          }
        : {}),
    };
  });
}

/** The inherited environment without any SLUICE_* variable, so only ours apply. */
function cleanEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
}

function startCoordinator(policiesFile, { name = 'coordinator', load = requests, prefix = '' } = {}) {
  return startHttp(name, {
    load,
    args: () => ['dist/apps/coordinator/src/main.js'],
    env: (port) => ({
      SLUICE_PORT: String(port),
      SLUICE_REDIS_URL: REDIS_URL,
      // Its own keys: the batched run's grants do not share a budget with the single run's.
      SLUICE_KEY_PREFIX: `${PREFIX}-${prefix}${name}`,
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_POLICIES_FILE: policiesFile,
    }),
  });
}

function startBaseline(prefix = '') {
  return startHttp('baseline', {
    args: () => ['test/bench/baseline-server.mjs'],
    env: (port) => ({
      BENCH_PORT: String(port),
      BENCH_REDIS_URL: REDIS_URL,
      BENCH_KEY_PREFIX: `${PREFIX}-${prefix}base`,
      BENCH_BUDGET: JSON.stringify(BUDGET),
    }),
  });
}

/** The HTTP contenders side by side (see measureInTurn); a server that fails to start fails the run. */
async function measureHttpContenders(policiesFile) {
  const servers = [];
  try {
    servers.push(await startCoordinator(policiesFile));
    servers.push(await startCoordinator(policiesFile, { name: 'coordinator-batched', load: batchRequests }));
    servers.push(await startCoordinator(policiesFile, { name: 'coordinator-reports', load: reportRequests }));
    servers.push(await startBaseline());
    const results = await measureInTurn(servers);
    const perRequest = { 'coordinator-batched': BATCH_SIZE, 'coordinator-reports': 0 };
    return results.map((result, i) => ({
      contender: servers[i].name,
      ...result,
      ...(servers[i].name in perRequest ? { decisionsPerRequest: perRequest[servers[i].name] } : {}),
    }));
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}

/**
 * `--node-lines`: the single-decision coordinator and the baseline on every other supported Node.js
 * line, one round of each (saturated, then at FIXED_RATE), with their heaps.
 */
async function measureOtherNodeLines(policiesFile) {
  const byLine = [];
  for (const { line, node } of nodeLines().filter(({ line }) => line !== currentLine())) {
    serverNode = node;
    const servers = [];
    try {
      servers.push(await startCoordinator(policiesFile, { name: 'coordinator', prefix: `node${line}` }));
      servers.push(await startBaseline(`node${line}`));
      process.stdout.write(`Node ${line} (${node}):\n`);
      const results = await measureInTurn(servers, 1);
      byLine.push({ line, results: results.map((result, i) => ({ contender: servers[i].name, ...result })) });
    } catch (error) {
      console.error(`Node ${line} failed: ${error.message}`);
      process.exitCode = 1;
    } finally {
      for (const server of servers) await stopChild(server.child);
      serverNode = process.execPath;
    }
  }
  return byLine;
}

function printOtherNodeLines(byLine) {
  for (const { line, results } of byLine) {
    const [coordinator, baseline] = ['coordinator', 'baseline'].map((name) =>
      results.find((r) => r.contender === name),
    );
    console.log(
      `\nNode ${line}, one round each: coordinator ${Math.round(coordinator.rps)} req/s, baseline ` +
        `${Math.round(baseline.rps)} req/s (${(coordinator.rps / baseline.rps).toFixed(2)}x)`,
    );
    printHeap(results, `Node ${line}: heap of each server over its saturated round`);
  }
}

/** EVALSHA straight from redis-benchmark: a short pilot run sizes the real one to about LOAD_SECONDS. */
async function measureRedisBenchmark(redis) {
  const sha = await redis.script('LOAD', loadScript('decide_retry'));
  // The keys and arguments RedisStore.decideRetry passes (lua/decide_retry.lua's header).
  const tagged = `${PREFIX}-rb:{${NAMESPACE}/dep-__rand_int__}`;
  // The last key is the request id's grant: without a request id ('') the script never touches it.
  const keys = ['budget', 'breaker', 'latency', 'retry:'].map((name) => `${tagged}:${name}`);
  const args = [
    BUDGET.ratio,
    BUDGET.minRetriesPerSecond,
    BUDGET.windowSeconds,
    25,
    '',
    `${tagged}:events`,
    'dep',
    10,
    '',
    60_000,
  ];
  const command = ['EVALSHA', sha, String(keys.length), ...keys, ...args.map(String)];
  const options = { host: REDIS_HOST, port: REDIS_PORT, connections: CONNECTIONS, keyspace: DEPENDENCIES.length };
  const probe = command.slice(3).map((part) => part.replace('__rand_int__', 'probe'));
  const [code] = await redis.evalsha(sha, keys.length, ...probe);
  if (code !== 1) throw new Error(`expected decide_retry to grant, got code ${code}`);
  const pilot = await redisBenchmark({ ...options, requests: 20_000, command });
  const total = Math.max(20_000, Math.min(2_000_000, Math.round(pilot.rps * LOAD_SECONDS)));
  process.stdout.write(`redis-benchmark: ${total} EVALSHA calls...\n`);
  return redisBenchmark({ ...options, requests: total, command });
}

/** One contender's result, or its failure: the others still run and print. */
async function measure(contender, run) {
  try {
    return { contender, ...(await run()) };
  } catch (error) {
    console.error(`${contender} failed: ${error.message}`);
    process.exitCode = 1;
    return { contender, failed: error.message };
  }
}

async function deleteBenchKeys(redis) {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    if (keys.length > 0) deleted += await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  return deleted;
}

/** A load result's failed requests: non-2xx answers, socket errors, timeouts. */
const failures = (result) => result.non2xx + result.errors + result.timeouts;

function printTable(results) {
  const baseline = results.find((result) => result.contender === 'baseline' && !result.failed);
  const number = (value, digits) =>
    value === null || value === undefined ? 'n/a' : String(Number(value.toFixed(digits)));
  const rows = results.map((result) => {
    if (result.failed) return [result.contender, 'failed', '', '', '', '', '', ''];
    const decisions = result.rps * (result.decisionsPerRequest ?? 1);
    return [
      result.contender,
      number(result.rps, 0),
      decisions > 0 ? number(decisions, 0) : '-',
      number(result.p50Ms, 3),
      number(result.p99Ms, 3),
      baseline && decisions > 0 ? `${(decisions / baseline.rps).toFixed(2)}x` : '-',
      String(failures(result)),
      result.roundsRps ? result.roundsRps.join(' / ') : '-',
    ];
  });
  const header = [
    'contender',
    'requests/s',
    'decisions/s',
    'p50 ms',
    'p99 ms',
    'vs baseline',
    'errors',
    'rounds, requests/s',
  ];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const pad = (cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]));
  const line = (cells) => cells.map(pad).join(' | ');
  console.log(`\n${line(header)}\n${widths.map((width) => '-'.repeat(width)).join('-|-')}`);
  for (const row of rows) console.log(line(row));
  console.log(
    '(HTTP rows: the median of the rounds, by requests/s; autocannon measures latency to the whole millisecond; errors: non-2xx answers, socket errors, timeouts; ' +
      `coordinator-batched: ${BATCH_SIZE} asks for one dependency a request, its latency per request; ` +
      `coordinator-reports: one report of one dependency a request, over ${REPORTED_DEPENDENCIES} dependencies (its requests/s are reports/s); ` +
      'vs baseline: decisions/s over the baseline\u2019s single decisions/s)',
  );
  const atRate = results.filter((result) => result.fixedRate);
  for (const pacing of atRate.length > 0 ? Object.keys(FIXED_RATE_LOADS) : []) {
    console.log(
      `\nAt a fixed ${FIXED_RATE} requests/s over ${CONNECTIONS} connections, ${pacing} (median round by p99):\n` +
        atRate
          .map(
            ({ contender, fixedRate: { [pacing]: r } }) =>
              `${contender}: ${number(r.rps, 0)} req/s, p50 ${number(r.p50Ms, 3)} ms, p99 ${number(r.p99Ms, 3)} ms, errors ${failures(r)}`,
          )
          .join('\n'),
    );
  }
  printHeap(results);
  const anyFailed = (result) =>
    result.failed || failures(result) > 0 || Object.values(result.fixedRate ?? {}).some((r) => failures(r) > 0);
  if (results.some(anyFailed)) {
    console.log('WARNING: some requests failed, so these numbers do not measure decisions alone');
  }
}

/** Each server's heap over its saturated rounds (and its paced ones), and the paced p99 over the baseline's. */
function printHeap(results, title = 'Heap of each server over its saturated rounds') {
  const measured = results.filter((result) => result.heap);
  if (measured.length === 0) return;
  const figures = (heap) =>
    `${Math.round(heap.bytesPerDecision)} B allocated per decision, ` +
    `${heap.scavengesPerSecond.toFixed(1)} scavenges/s, ${heap.markCompacts} mark-compacts, ` +
    `GC ${heap.gcMsPerSecond.toFixed(1)} ms/s`;
  console.log(
    `\n${title} (${measured[0].heap.allocationCounter === 'v8' ? "V8's allocation counter" : 'heap growth plus what each GC freed'}):\n` +
      measured
        .map(
          ({ contender, heap, pacedHeap }) =>
            `${contender}: ${figures(heap)}` +
            (contender === 'coordinator-reports' ? ' (per report)' : '') +
            (pacedHeap ? `\n${' '.repeat(contender.length)}  at ${FIXED_RATE}/s paced: ${figures(pacedHeap)}` : ''),
        )
        .join('\n'),
  );
  const paced = (name) => results.find((result) => result.contender === name)?.fixedRate?.paced;
  const [coordinator, baseline] = [paced('coordinator'), paced('baseline')];
  if (coordinator && baseline && baseline.p99Ms > 0) {
    console.log(
      `paced ${FIXED_RATE}/s p99, coordinator over baseline: ${(coordinator.p99Ms / baseline.p99Ms).toFixed(2)}x ` +
        `(${coordinator.p99Ms.toFixed(3)} vs ${baseline.p99Ms.toFixed(3)} ms)`,
    );
  }
}

async function main() {
  const redis = new Redis(REDIS_URL, { protocol: 2, lazyConnect: true });
  await redis.connect();
  const tempDir = await mkdtemp(join(os.tmpdir(), 'sluice-bench-'));
  const stopOnSignal = async (signal) => {
    process.stderr.write(`\n${signal}: stopping children and deleting bench keys\n`);
    await stopAllChildren();
    await deleteBenchKeys(redis).catch(() => {});
    await rm(tempDir, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1];
    const environment = {
      node: process.version,
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model,
      platform: `${os.platform()} ${os.release()}`,
      redis: redisVersion,
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      loadSeconds: LOAD_SECONDS,
      rounds: ROUNDS,
      dependencies: DEPENDENCIES.length,
      batchSize: BATCH_SIZE,
      keyPrefix: PREFIX,
    };
    console.log(
      `node ${environment.node}, ${environment.cores} cores (${environment.cpu}), redis ${redisVersion}; ` +
        `${CONNECTIONS} connections, ${DEPENDENCIES.length} dependencies, ${ROUNDS} rounds of ${LOAD_SECONDS} s per HTTP contender`,
    );

    const policiesFile = join(tempDir, 'policies.json');
    await writeFile(
      policiesFile,
      JSON.stringify({ namespaces: { [NAMESPACE]: { default: { retryBudget: BUDGET } } } }),
    );

    const results = [];
    try {
      results.push(...(await measureHttpContenders(policiesFile)));
    } catch (error) {
      console.error(`the HTTP contenders failed: ${error.message}`);
      process.exitCode = 1;
      for (const contender of ['coordinator', 'coordinator-batched', 'coordinator-reports', 'baseline']) {
        results.push({ contender, failed: error.message });
      }
    }
    results.push(await measure('redis-benchmark', () => measureRedisBenchmark(redis)));
    const otherNodeLines = process.argv.includes('--node-lines') ? await measureOtherNodeLines(policiesFile) : [];
    printTable(results);
    printOtherNodeLines(otherNodeLines);

    const resultsDir = join(ROOT, 'test/bench/results');
    await mkdir(resultsDir, { recursive: true });
    const file = join(resultsDir, `decisions-${new Date().toISOString().replaceAll(':', '-')}.json`);
    await writeFile(file, JSON.stringify({ environment, results, otherNodeLines }, null, 2) + '\n');
    console.log(`\nraw results: ${file}`);
  } finally {
    await stopAllChildren();
    const deleted = await deleteBenchKeys(redis);
    console.log(`deleted ${deleted} bench keys (${PREFIX}*)`);
    redis.disconnect();
    await rm(tempDir, { recursive: true, force: true });
  }
}

process.on('exit', killAllChildrenNow);
main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
