// The dependency: a real HTTP server on loopback with a scripted life, counting every request it
// receives per 100 ms bin and per caller. In the outage scenario it answers at once (healthy, full
// outage, brown-out, recovery); in the metastable one it has a finite capacity (workers, a service
// time, a FIFO queue) that drops during the trigger. Forked by run.mjs; its phases run on its own
// monotonic clock from the start signal.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { BIN_MS, HEADERS, METASTABLE, brownoutFails, phaseAt, phaseBounds, scenarioMs } from './scenario.mjs';

/** Counting goes on this long past the scenario, for the last retries and backoffs. */
const DRAIN_MS = 5000;

let run; // the scenario under way: its clock, its script and its counts

function newRun({ t0, scenario, phases, brownoutRate, retryAfterSeconds, latencyMs }) {
  const bins = Math.ceil((scenarioMs(phases) + DRAIN_MS) / BIN_MS);
  const series = () => new Array(bins).fill(0);
  return {
    scenario,
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
    served: series(), // metastable: requests whose service ended, by bin of the end
    wasted: series(), // of which the caller had given up on (its connection closed) before the end
    queued: series(), // metastable: requests waiting in the queue at the end of each bin (its peak)
    perCaller: {}, // caller id → requests per bin
    probesInFlight: 0,
    maxProbesInFlight: 0, // the most probes under way at once
    queue: [], // metastable: requests waiting for a worker, oldest first
    busy: 0, // metastable: workers serving
  };
}

/** Metastable: the workers serving at `t` ms from the start (fewer during the trigger). */
function workersAt(current, t) {
  return phaseAt(current.phases, t) === 'trigger' ? METASTABLE.triggerWorkers : METASTABLE.workers;
}

const gone = (response) => response.destroyed || !response.socket || response.socket.destroyed;

/** Metastable: starts the next requests in line while a worker is free. */
function serve(current) {
  const t = performance.now() - current.start;
  while (current.busy < workersAt(current, t) && current.queue.length > 0) {
    const response = current.queue.shift();
    current.busy++;
    setTimeout(() => {
      current.busy--;
      const bin = Math.floor((performance.now() - current.start) / BIN_MS);
      if (bin < current.bins) {
        current.served[bin]++;
        // The caller gave up (its attempt timed out and closed the connection): the work was done anyway.
        if (gone(response)) current.wasted[bin]++;
      }
      if (!gone(response)) answer(response, 200, 0);
      if (run === current) serve(current);
    }, METASTABLE.serviceMs);
  }
}

/** Metastable: the queue's length, sampled per bin; and the workers started again when the trigger ends. */
function startMetastable(current) {
  const sample = setInterval(() => {
    if (run !== current) return clearInterval(sample);
    const bin = Math.floor((performance.now() - current.start) / BIN_MS);
    if (bin >= 0 && bin < current.bins) current.queued[bin] = Math.max(current.queued[bin], current.queue.length);
  }, BIN_MS / 2);
  const triggerEnd = phaseBounds(current.phases).trigger[1];
  setTimeout(() => run === current && serve(current), Math.max(0, current.start + triggerEnd - performance.now()) + 1);
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
    // A late caller's attempt still waits its turn behind the queue: the run's end is no recovery.
    if (current.scenario === 'metastable') {
      current.queue.push(response);
      return serve(current);
    }
    return answer(response, 200, current.latencyMs);
  }
  const caller = String(request.headers[HEADERS.caller] ?? 'unknown');
  const attempt = Number(request.headers[HEADERS.attempt] ?? 1);
  const probe = request.headers[HEADERS.probe];
  current.received[bin]++;
  if (probe) {
    current.probes[bin]++;
    if (probe === 'fallback') current.fallbackProbes[bin]++;
    // Under way until answered or given up on by its caller.
    current.maxProbesInFlight = Math.max(current.maxProbesInFlight, ++current.probesInFlight);
    response.on('close', () => current.probesInFlight--);
  } else if (attempt > 1) current.retries[bin]++;
  else current.first[bin]++;
  (current.perCaller[caller] ??= new Array(current.bins).fill(0))[bin]++;

  if (current.scenario === 'metastable') {
    current.queue.push(response);
    return serve(current);
  }

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
    if (run.scenario === 'metastable') startMetastable(run);
    process.send({ type: 'started' });
  } else if (message.type === 'collect') {
    const {
      received,
      first,
      retries,
      probes,
      fallbackProbes,
      failed,
      served,
      wasted,
      queued,
      perCaller,
      beforeStart,
      afterEnd,
      brownoutIndex,
      maxProbesInFlight,
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
        served,
        wasted,
        queued,
        perCaller,
        beforeStart,
        afterEnd,
        brownoutRequests: brownoutIndex,
        maxProbesInFlight,
      },
    });
    run = undefined;
  }
});
// Nothing outlives the benchmark: the parent gone, this process goes too.
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', port: server.address().port });
