// Child processes, ports and load generation for the benchmarks in this folder.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';

const children = new Set();
let started = 0;

/** The coordinator's shortest time between two record_outcomes calls of one dependency, as built (dist/). */
export function reportMergeIntervalMs() {
  const built = join(
    dirname(fileURLToPath(import.meta.url)),
    '../../dist/apps/coordinator/src/budgets/report-merger.js',
  );
  return createRequire(import.meta.url)(built).REPORT_MERGE_INTERVAL_MS;
}

/**
 * How often the benches' callers report (the SDK's default, passed to each client explicitly, so
 * the bounds computed from it hold whatever the default becomes).
 */
export const REPORT_INTERVAL_MS = 200;

/**
 * Tracks a child process until it exits: its output is kept (last few KB) for error messages,
 * `exited` resolves with its exit, and stopAllChildren / killAllChildrenNow reach it.
 */
export function track(child, name = 'process') {
  child.name = name;
  child.output = '';
  const keep = (chunk) => {
    child.output = (child.output + chunk).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.exited = once(child, 'exit').then(([code, signal]) => {
    children.delete(child);
    return { code, signal };
  });
  children.add(child);
  started++;
  return child;
}

/** How many child processes were started, and the ones not yet seen to exit. */
export function childProcesses() {
  return { started, running: [...children].map((child) => `${child.name} (pid ${child.pid})`) };
}

/** Starts a tracked child process. */
export function startChild(command, args, { env, cwd } = {}) {
  return track(spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] }), command);
}

/** Runs a command to completion and returns its stdout; throws on a non-zero exit. */
export async function run(command, args) {
  const child = startChild(command, args);
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  const { code, signal } = await child.exited;
  if (code !== 0) throw new Error(`${command} exited with ${code ?? signal}: ${child.output.trim()}`);
  return stdout;
}

/** SIGTERM, then SIGKILL if the child is still there after `graceMs`. */
export async function stopChild(child, graceMs = 3000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

export async function stopAllChildren() {
  await Promise.all([...children].map((child) => stopChild(child)));
}

/** Last resort on process exit: nothing may outlive the benchmark. */
export function killAllChildrenNow() {
  for (const child of children) child.kill('SIGKILL');
}

/** The value after `flag` on the command line (`--runs 3`), or `fallback` when it is absent. */
export function commandLineValue(flag, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : fallback;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

/** Polls `url` until it answers 200; fails early if `child` exits first. */
export async function waitReady(url, child, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${child.name} exited before it was ready:\n${child.output.trim()}`);
    }
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} was not ready within ${timeoutMs} ms:\n${child.output.trim()}`);
}

/** Drives `requests` (cycled per connection) against `baseUrl` with autocannon. */
export async function httpLoad(baseUrl, { requests, connections, durationSeconds, overallRate }) {
  const result = await autocannon({ url: baseUrl, connections, duration: durationSeconds, requests, overallRate });
  return {
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** One redis-benchmark run of `command`; parses its --csv line (7.x prints percentiles there). */
export async function redisBenchmark({ host, port, requests, connections, keyspace, command }) {
  const args = ['-h', host, '-p', String(port), '-n', String(requests), '-c', String(connections), '-q', '--csv'];
  if (keyspace) args.push('-r', String(keyspace));
  const csv = await run('redis-benchmark', [...args, ...command]);
  const lines = csv.trim().split('\n');
  const header = parseCsvLine(lines[0]);
  const row = parseCsvLine(lines.at(-1));
  const field = (name) => (header.includes(name) ? Number(row[header.indexOf(name)]) : null);
  return {
    rps: field('rps'),
    p50Ms: field('p50_latency_ms'),
    p99Ms: field('p99_latency_ms'),
    total: requests,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
  };
}

function parseCsvLine(line) {
  return [...line.matchAll(/"((?:[^"]|"")*)"/g)].map((match) => match[1].replaceAll('""', '"'));
}
