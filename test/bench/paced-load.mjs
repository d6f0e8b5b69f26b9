// An open-loop load at an even rate, for latency below saturation. autocannon's rate is a quota
// per connection per second (each connection sends as fast as it can until its quota, then idles
// to the next second), so its "5,000/s" is a burst at full speed for part of every second and its
// latency that of a saturated server. Here request i is due at start + i / rate and goes out on
// the first idle one of `connections` keep-alive sockets (queued until one is free), and its
// latency counts from when it was due, so a late send (a busy generator, every connection taken)
// counts against the answer, as wrk2 measures it. Requests are written as prepared bytes and
// answers read with a minimal HTTP/1.1 parser (Content-Length bodies only), so the generator costs
// little of the CPU it shares with the server.
import { connect } from 'node:net';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';

const HEADERS_END = Buffer.from('\r\n\r\n');

/**
 * Sends `rate` requests per second for `durationSeconds`, cycling through `requests`
 * ({ method, path, headers, body }). Returns what httpLoad returns: achieved requests/s, p50 and
 * p99 latency in ms (from each request's due time), totals.
 */
export async function pacedLoad(baseUrl, { requests, connections, durationSeconds, rate }) {
  const url = new URL(baseUrl);
  const prepared = requests.map((request) => prepare(url, request));
  const due = Math.round(rate * durationSeconds);
  const latencies = new Float64Array(due).fill(Number.NaN);
  const waiting = []; // indexes due but not sent: every connection was busy (read from `nextWaiting`)
  let nextWaiting = 0;
  const idle = new Set();
  let live = connections;
  let sent = 0;
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const intervalMs = 1000 / rate;
  let start;
  const dueAt = (index) => start + index * intervalMs;

  const sockets = await Promise.all(
    Array.from({ length: connections }, async () => {
      const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
      await once(socket, 'connect');
      return socket;
    }),
  );
  const settle = () => {
    if (++answered === due) finish();
  };
  const startOn = (connection, index) => {
    connection.index = index;
    connection.socket.write(prepared[index % prepared.length]);
  };
  /** Every request no connection is left to send fails: the run ends instead of waiting for it. */
  const failUnsendable = () => {
    const unsent = due - sent + (waiting.length - nextWaiting);
    errors += unsent;
    sent = due;
    nextWaiting = waiting.length;
    answered += unsent;
    if (answered === due) finish();
  };
  for (const socket of sockets) {
    const connection = { socket, index: -1, buffer: Buffer.alloc(0) };
    socket.on('data', (chunk) => {
      connection.buffer = connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk]);
      const answer = parseAnswer(connection.buffer);
      if (!answer) return;
      connection.buffer = connection.buffer.subarray(answer.length);
      latencies[connection.index] = performance.now() - dueAt(connection.index);
      connection.index = -1;
      if (answer.status < 200 || answer.status > 299) non2xx++;
      settle();
      if (nextWaiting < waiting.length) startOn(connection, waiting[nextWaiting++]);
      else idle.add(connection);
    });
    socket.on('error', () => undefined); // counted on 'close'
    socket.on('close', () => {
      idle.delete(connection);
      if (connection.index >= 0) {
        errors++;
        settle();
      }
      if (--live === 0 && answered < due) failUnsendable();
    });
    idle.add(connection);
  }

  start = performance.now();
  const pump = () => {
    const now = performance.now();
    while (sent < due && dueAt(sent) <= now) {
      const connection = idle.values().next().value;
      if (connection) {
        idle.delete(connection);
        startOn(connection, sent);
      } else waiting.push(sent);
      sent++;
    }
    if (sent < due) setTimeout(pump, Math.max(0, dueAt(sent) - performance.now()));
  };
  pump();
  await finished;
  const elapsedMs = performance.now() - start;
  live = -1; // closing them now fails nothing
  for (const socket of sockets) socket.destroy();

  const measured = latencies.filter((latency) => !Number.isNaN(latency)).sort();
  const percentile = (p) => (measured.length === 0 ? Number.NaN : measured[Math.ceil((p / 100) * measured.length) - 1]);
  return {
    rps: measured.length / (elapsedMs / 1000),
    p50Ms: percentile(50),
    p99Ms: percentile(99),
    total: due,
    non2xx,
    errors,
    timeouts: 0,
  };
}

/** The bytes of one keep-alive HTTP/1.1 request. */
function prepare(url, { method, path, headers = {}, body }) {
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
  const lines = [`${method} ${path} HTTP/1.1`, `host: ${url.host}`, 'connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (payload.length > 0 || method !== 'GET') lines.push(`content-length: ${payload.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), payload]);
}

/** The first whole answer in `buffer` ({ status, length } in bytes), or undefined while it is incomplete. */
function parseAnswer(buffer) {
  const headersEnd = buffer.indexOf(HEADERS_END);
  if (headersEnd < 0) return undefined;
  const head = buffer.toString('latin1', 0, headersEnd);
  const status = Number(head.slice(9, 12));
  const contentLength = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!contentLength) throw new Error(`an answer without content-length: ${head.split('\r\n')[0]}`);
  const length = headersEnd + HEADERS_END.length + Number(contentLength[1]);
  return buffer.length < length ? undefined : { status, length };
}
