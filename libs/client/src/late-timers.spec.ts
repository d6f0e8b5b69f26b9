import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { Call } from './execute/call';
import type { CallPolicy } from './execute/call-policy';
import { Attempt, sendAttempt } from './execute/attempt';
import { NO_ADMISSION } from './decide/decider';
import { TimeoutWatch } from './timeout-watch';
import { Agents, readBody, send } from './transport/http';
import { within } from './within';

/**
 * Resumes in the event loop's check phase: a stall there is followed by the next turn's timers
 * before its poll, the order in which a late timer beats an answer already in the socket.
 */
const inCheckPhase = () => new Promise((resolve) => setImmediate(resolve));

/** Keeps the event loop busy for `ms`, as a burst of failures to handle or a GC pause does. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** An echo server and an HTTP server in a process of their own: they answer while this one is stalled. */
const PEERS = `
  const net = require('node:net');
  const http = require('node:http');
  const echo = net.createServer((peer) => peer.on('data', (chunk) => peer.write(chunk))).listen(0, '127.0.0.1', () => {
    const web = http.createServer((request, response) => response.end('answered')).listen(0, '127.0.0.1', () => {
      console.log(JSON.stringify({ echo: echo.address().port, web: web.address().port }));
    });
  });
`;

/**
 * Node runs expired timers before it reads sockets: each timer here is due while its answer waits
 * in a socket behind a stalled event loop, and the answer must win.
 */
describe('timeouts after a stalled event loop, the answer already in the socket', () => {
  let peers: ChildProcess;
  let webPort: number;
  let socket: Socket;
  const agents = new Agents();

  beforeAll(async () => {
    peers = spawn(process.execPath, ['-e', PEERS], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(peers.stdout!, 'data')) as [Buffer];
    const ports = JSON.parse(line.toString()) as { echo: number; web: number };
    webPort = ports.web;
    socket = connect(ports.echo, '127.0.0.1');
    await once(socket, 'connect');
  });

  afterAll(async () => {
    socket.destroy();
    agents.destroy();
    peers.kill();
    await once(peers, 'exit');
  });

  /** The echo of `text`, as a promise; the echo arrives within microseconds. */
  const echoed = (text: string) =>
    new Promise<string>((resolve) => {
      socket.once('data', (chunk) => resolve(chunk.toString()));
      socket.write(text);
    });

  it('a decision wait (within) takes the answer that came during the stall', async () => {
    await inCheckPhase();
    const verdict = within(echoed('decision'), 20);
    stallEventLoop(100);
    await expect(verdict).resolves.toBe('decision');
  });

  /** An attempt of `work` with a `timeoutMs` timeout, sent: how it ended. */
  const sent = (work: () => unknown, timeoutMs: number) => {
    const attempt = new Attempt(
      undefined as unknown as CallPolicy,
      {} as Call,
      work,
      1,
      timeoutMs,
      false,
      0,
      NO_ADMISSION,
      Date.now(),
    );
    const ending = (kind: string) => (_attempt: Attempt, outcome: unknown) =>
      `${kind}: ${outcome instanceof Error ? outcome.name : String(outcome)}`;
    return sendAttempt(attempt, new TimeoutWatch(), ending('answered'), ending('failed'));
  };

  it('an attempt timeout does not fail an attempt answered during the stall', async () => {
    await inCheckPhase();
    const ended = sent(() => echoed('attempt'), 20);
    stallEventLoop(100);
    await expect(ended).resolves.toBe('answered: attempt');
  });

  it('still times out an attempt that gets no answer', async () => {
    await expect(sent(() => new Promise(() => undefined), 20)).resolves.toBe('failed: AttemptTimeoutError');
  });

  it("a request's head timeout takes the response that came during the stall", async () => {
    const url = new URL(`http://127.0.0.1:${webPort}/`);
    // Warm the kept-alive connection, so the stall holds only the exchange itself.
    await readBody(await send(url, { method: 'GET', headers: {}, agents }));
    const response = send(url, { method: 'GET', headers: {}, headTimeoutMs: 20, agents });
    // Once the request is written (a turn of the loop), the stall outlasts the timeout while the server answers.
    await inCheckPhase();
    stallEventLoop(100);
    await expect(response.then(readBody).then(String)).resolves.toBe('answered');
  });
});
