// The dependency: a real HTTP server on loopback with a scripted life (healthy, full outage,
// brown-out, recovery), counting every request it receives per 100 ms bin and per caller.
// Forked by run.mjs; its phases run on its own monotonic clock from the start signal.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { BIN_MS, HEADERS, brownoutFails, phaseAt, scenarioMs } from './scenario.mjs';

/** Counting goes on this long past the scenario, for the last retries and backoffs. */
const DRAIN_MS = 5000;

let run; // the scenario under way: its clock, its script and its counts

function newRun({ t0, phases, brownoutRate, retryAfterSeconds, latencyMs }) {
  const bins = Math.ceil((scenarioMs(phases) + DRAIN_MS) / BIN_MS);
  const series = () => new Array(bins).fill(0);
  return {
    // The start, on this process's monotonic clock: the epoch time t0 was agreed with the callers.
    start: performance.now() + (t0 - Date.now()),
    phases,
    brownoutRate,
    retryAfter: String(retryAfterSeconds),
    latencyMs,
    bins,
    brownoutIndex: 0,
    beforeStart: 0,
    afterEnd: 0,
    received: series(), // every request
    first: series(), // first attempts (x-fleet-attempt 1) that are not probes
    retries: series(), // later attempts that are not probes
    probes: series(), // requests the caller sent as half-open probes
    fallbackProbes: series(), // of which the SDK's local fallback breaker's (sluice strategy)
    failed: series(), // answered with a failure (503)
    perCaller: {}, // caller id → requests per bin
  };
}

function handle(request, response) {
  const current = run;
  const t = current ? performance.now() - current.start : -1;
  if (!current || t < 0) {
    if (current) current.beforeStart++;
    return answer(response, 200, current?.latencyMs ?? 0);
  }
  const bin = Math.floor(t / BIN_MS);
  if (bin >= current.bins) {
    current.afterEnd++;
    return answer(response, 200, current.latencyMs);
  }
  const caller = String(request.headers[HEADERS.caller] ?? 'unknown');
  const attempt = Number(request.headers[HEADERS.attempt] ?? 1);
  const probe = request.headers[HEADERS.probe];
  current.received[bin]++;
  if (probe) {
    current.probes[bin]++;
    if (probe === 'fallback') current.fallbackProbes[bin]++;
  } else if (attempt > 1) current.retries[bin]++;
  else current.first[bin]++;
  (current.perCaller[caller] ??= new Array(current.bins).fill(0))[bin]++;

  switch (phaseAt(current.phases, t)) {
    case 'outage':
      current.failed[bin]++;
      return answer(response, 503, 0);
    case 'brownout':
      if (brownoutFails(current.brownoutIndex++, current.brownoutRate)) {
        current.failed[bin]++;
        return answer(response, 503, 0, { 'retry-after': current.retryAfter });
      }
      return answer(response, 200, current.latencyMs);
    default:
      return answer(response, 200, current.latencyMs);
  }
}

function answer(response, status, delayMs, headers = {}) {
  const send = () => {
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(status === 200 ? 'ok' : 'unavailable');
  };
  if (delayMs > 0) setTimeout(send, delayMs);
  else send();
}

const server = createServer({ keepAlive: true }, handle);
server.keepAliveTimeout = 120_000;
server.headersTimeout = 130_000;
server.listen(0, '127.0.0.1');
await once(server, 'listening');

process.on('message', (message) => {
  if (message.type === 'start') {
    run = newRun(message);
    process.send({ type: 'started' });
  } else if (message.type === 'collect') {
    const {
      received,
      first,
      retries,
      probes,
      fallbackProbes,
      failed,
      perCaller,
      beforeStart,
      afterEnd,
      brownoutIndex,
    } = run;
    process.send({
      type: 'counts',
      counts: {
        received,
        first,
        retries,
        probes,
        fallbackProbes,
        failed,
        perCaller,
        beforeStart,
        afterEnd,
        brownoutRequests: brownoutIndex,
      },
    });
    run = undefined;
  }
});
// Nothing outlives the benchmark: the parent gone, this process goes too.
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', port: server.address().port });
