import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { findFreePort } from '../support/ports';
import { sleep, waitUntil } from '../support/time';

// SIGTERM to the built service under load: it stops accepting connections, ends its event streams
// cleanly, finishes every request it already received, closes the store and exits 0.
//
// A request may fail only by never reaching the service: its connect was refused because the
// listener had closed, or (with a new connection per request) its connection was still in the
// kernel's accept queue when the listener closed, so the service never saw it. The service logs
// every request it receives (debug level, with the x-request-id the test sends), which tells the two
// apart from a request the service dropped.

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');
const CONCURRENCY = 16;
/** Requests per worker at most, so a service that never stops cannot hang the test. */
const MAX_REQUESTS_PER_WORKER = 2_000;
/** SIGTERM to exit: the drain itself takes a few hundred milliseconds. */
const EXIT_BOUND_MS = 10_000;
const RETRY_BODY = JSON.stringify({ attempt: 1, idempotent: true, status: 503 });

interface Service {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

async function startService(): Promise<Service> {
  const port = await findFreePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      SLUICE_PORT: String(port),
      SLUICE_LOG_LEVEL: 'debug',
      SLUICE_SSE_HEARTBEAT_MS: '200',
    },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  await waitUntil(
    async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200,
    15_000,
    () => `the built service never became ready:\n${output}`,
  );
  return { child, port, output: () => output, exited };
}

/** The service's exit, or undefined if it is still running after `ms`. */
async function exitWithin(service: Service, ms: number): Promise<Awaited<Service['exited']> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    service.exited,
    new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms))),
  ]);
  clearTimeout(timer);
  return exit;
}

interface Outcome {
  id: string;
  startedAt: number;
  finishedAt: number;
  /** The TCP connection was established (new or reused) before the request failed or completed. */
  connected: boolean;
  status?: number;
  body?: string;
  error?: string;
}

let nextId = 0;

function retryRequest(port: number, agent: http.Agent | false): Promise<Outcome> {
  const outcome: Outcome = {
    id: `gs-${process.pid}-${nextId++}`,
    startedAt: Date.now(),
    finishedAt: 0,
    connected: false,
  };
  return new Promise((resolve) => {
    const done = () => {
      outcome.finishedAt = Date.now();
      resolve(outcome);
    };
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/shop/deps/pay/retry',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(RETRY_BODY),
          'x-request-id': outcome.id,
        },
      },
      (res) => {
        outcome.status = res.statusCode;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          if (res.complete) outcome.body = body;
          else outcome.error = 'response cut short';
          done();
        });
        res.on('error', (error: NodeJS.ErrnoException) => {
          outcome.error = error.code ?? error.message;
          done();
        });
      },
    );
    req.on('socket', (socket) => {
      if (!socket.connecting) outcome.connected = true;
      else socket.once('connect', () => (outcome.connected = true));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      outcome.error = error.code ?? error.message;
      done();
    });
    req.end(RETRY_BODY);
  });
}

/** CONCURRENCY workers sending retry decisions back to back until the service refuses connections. */
function runLoad(port: number, agent: http.Agent | false): { outcomes: Outcome[]; finished: Promise<void> } {
  const outcomes: Outcome[] = [];
  const worker = async () => {
    for (let i = 0; i < MAX_REQUESTS_PER_WORKER; i++) {
      const outcome = await retryRequest(port, agent);
      outcomes.push(outcome);
      if (outcome.error === 'ECONNREFUSED') return;
    }
  };
  return { outcomes, finished: Promise.all(Array.from({ length: CONCURRENCY }, worker)).then(() => undefined) };
}

interface EventStream {
  firstFrame: Promise<string>;
  /** Resolves 'ended' when the server ended the response properly, else what went wrong. */
  result: Promise<'ended' | string>;
}

/** An SSE stream over node:http, which tells a properly ended response from a cut connection. */
function openEventStream(port: number): EventStream {
  let gotFrame: (frame: string) => void;
  const firstFrame = new Promise<string>((resolve) => (gotFrame = resolve));
  const result = new Promise<string>((resolve) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/shop/events?deps=pay',
        agent: false,
        headers: { accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) resolve(`status ${res.statusCode}`);
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          const end = buffer.indexOf('\n\n');
          if (end >= 0) gotFrame(buffer.slice(0, end));
        });
        res.on('aborted', () => resolve('aborted'));
        res.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code ?? error.message}`));
        res.on('end', () => resolve(res.complete ? 'ended' : 'incomplete'));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code ?? error.message}`));
  });
  return { firstFrame, result };
}

/** The request ids the service logged as received. */
function receivedIds(output: string): Set<string> {
  const ids = new Set<string>();
  for (const line of output.split('\n')) {
    if (!line.includes('"incoming request"')) continue;
    const reqId = (JSON.parse(line) as { reqId?: string }).reqId;
    if (reqId) ids.add(reqId);
  }
  return ids;
}

function isFullDecision(outcome: Outcome): boolean {
  if (outcome.status !== 200 || outcome.body === undefined) return false;
  const body = JSON.parse(outcome.body) as { allow?: unknown; reason?: unknown };
  return typeof body.allow === 'boolean' && ['granted', 'budget_exhausted'].includes(String(body.reason));
}

function summarize(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.error ? `${o.error}${o.connected ? ' (connected)' : ''}` : `${o.status}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

describe('graceful shutdown of the built service (SIGTERM under load)', () => {
  const services: Service[] = [];

  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first (npm test does)`);
  });
  afterAll(async () => {
    for (const service of services) {
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
      await service.exited;
    }
  });

  it('keep-alive clients: every request sent before or during the drain gets its full answer; the stream ends; exit 0', async () => {
    const service = await startService();
    services.push(service);
    const stream = openEventStream(service.port);
    expect(await stream.firstFrame).toContain('event: breaker');

    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const load = runLoad(service.port, agent);
    await waitUntil(
      () => load.outcomes.length >= 200,
      10_000,
      () => 'the load never got going',
    );
    // Paused, the service cannot answer: every worker's next request is sent and waits in its
    // connection. SIGTERM arrives with all CONCURRENCY of them in flight.
    service.child.kill('SIGSTOP');
    await sleep(100);
    const sigtermAt = Date.now();
    service.child.kill('SIGTERM');
    service.child.kill('SIGCONT');
    const exit = await exitWithin(service, EXIT_BOUND_MS);
    await load.finished;
    agent.destroy();

    expect({
      exit: exit && { code: exit.code, signal: exit.signal },
      log: service.output().slice(-2000),
    }).toMatchObject({
      exit: { code: 0, signal: null },
    });
    expect(exit!.at - sigtermAt).toBeLessThan(EXIT_BOUND_MS);
    expect(await stream.result).toBe('ended');

    const sentBeforeSigterm = load.outcomes.filter((o) => o.startedAt < sigtermAt && o.finishedAt >= sigtermAt);
    expect(sentBeforeSigterm.length).toBeGreaterThanOrEqual(CONCURRENCY);
    const failed = load.outcomes.filter((o) => !isFullDecision(o));
    // The only failures: connects refused once the listener had closed, after SIGTERM.
    expect(failed.filter((o) => !(o.error === 'ECONNREFUSED' && !o.connected && o.startedAt >= sigtermAt))).toEqual([]);
    expect(failed.length).toBeGreaterThan(0); // the load did run into the closed listener
    expect(service.output()).toMatch(/"msg":"stopped in \d+ ms"/);
    console.log(
      `keep-alive: ${load.outcomes.length} requests ${JSON.stringify(summarize(load.outcomes))}, ` +
        `${sentBeforeSigterm.length} in flight at SIGTERM, exit after ${exit!.at - sigtermAt} ms`,
    );
  });

  it('a new connection per request: every request the service received gets its full answer; exit 0', async () => {
    const service = await startService();
    services.push(service);
    const stream = openEventStream(service.port);
    await stream.firstFrame;

    const load = runLoad(service.port, false);
    await waitUntil(
      () => load.outcomes.length >= 200,
      10_000,
      () => 'the load never got going',
    );
    const sigtermAt = Date.now();
    service.child.kill('SIGTERM');
    const exit = await exitWithin(service, EXIT_BOUND_MS);
    await load.finished;

    expect({
      exit: exit && { code: exit.code, signal: exit.signal },
      log: service.output().slice(-2000),
    }).toMatchObject({
      exit: { code: 0, signal: null },
    });
    expect(await stream.result).toBe('ended');

    const received = receivedIds(service.output());
    expect(received.size).toBeGreaterThan(200);
    const failed = load.outcomes.filter((o) => !isFullDecision(o));
    // Whatever the service received, it answered in full.
    expect(failed.filter((o) => received.has(o.id))).toEqual([]);
    // What it did not receive failed at connect, or was reset still unaccepted, after SIGTERM.
    expect(
      failed.filter((o) => !(['ECONNREFUSED', 'ECONNRESET'].includes(o.error ?? '') && o.finishedAt >= sigtermAt)),
    ).toEqual([]);
    const finishedAfter = load.outcomes.filter((o) => o.finishedAt >= sigtermAt && isFullDecision(o));
    console.log(
      `connection per request: ${load.outcomes.length} requests ${JSON.stringify(summarize(load.outcomes))}, ` +
        `${finishedAfter.length} answered after SIGTERM, exit after ${exit!.at - sigtermAt} ms`,
    );
  });
});
