// One caller of the fleet: sends a fixed offered load (open loop, on a schedule that does not wait
// for answers) to the dependency through one strategy, and reports what happened to every call,
// per 100 ms bin of the call's scheduled start. Forked by run.mjs with its configuration as argv[2].
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  BrokenCircuitError,
  CircuitState,
  ExponentialBackoff,
  SamplingBreaker,
  circuitBreaker,
  handleWhen,
  noJitterGenerator,
  retry,
  wrap,
} from 'cockatiel';
import {
  ATTEMPT_TIMEOUT_MS,
  BIN_MS,
  CALL_DEADLINE_MS,
  DEPENDENCY,
  HEADERS,
  NAIVE_RETRIES,
  scenarioMs,
} from './scenario.mjs';
import { REPORT_INTERVAL_MS } from '../support.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const config = JSON.parse(process.argv[2]);
os.setPriority(config.nice);
const { id, strategy, dependencyUrl, phases, rate, offsetMs, policy: POLICY } = config;
const target = new URL('/work', dependencyUrl);
const agent = new Agent({ keepAlive: true, maxSockets: 1024 });

/** A failed answer of the dependency, with its Retry-After. */
class DependencyError extends Error {
  constructor(status, retryAfterMs) {
    super(`dependency answered ${status}`);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * One HTTP attempt; resolves on 200, rejects with a DependencyError or the network error. `probe`
 * marks a half-open probe: `fleet` (admitted by the coordinator), `local` (a per-process breaker's),
 * `fallback` (the SDK's local breaker while the coordinator did not answer), or '' for none.
 */
function send(attempt, probe, signal) {
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        agent,
        signal,
        headers: {
          [HEADERS.caller]: id,
          [HEADERS.attempt]: String(attempt),
          ...(probe ? { [HEADERS.probe]: probe } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode === 200) return resolve();
          const retryAfter = Number(res.headers['retry-after']);
          reject(new DependencyError(res.statusCode, Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const isRetriable = (error) =>
  !(error instanceof DependencyError) || error.status === 408 || error.status === 429 || error.status >= 500;

// What this caller saw, besides the per-call outcomes.
const seen = {
  halfOpenPeriods: 0,
  opens: 0,
  probesSent: 0,
  fallbackSwitches: 0,
  fallbackCauses: {},
  fallbackAtMs: [],
  transitions: [],
  giveUps: {},
};
/** The scenario's start on this process's monotonic clock, once known. */
let origin;
/** ms since the scenario's start (null before it is known). */
const at = () => (origin === undefined ? null : Math.round(performance.now() - origin));
const countGiveUp = (reason) => (seen.giveUps[reason] = (seen.giveUps[reason] ?? 0) + 1);

/**
 * Each strategy: `call()` runs one call to the end and says whether it succeeded and how many
 * requests it sent; `close()` releases what the strategy holds.
 */
async function makeStrategy() {
  switch (strategy) {
    case 'naive':
      // Immediate retries, NAIVE_RETRIES of them, whatever the failure: the shortcut.
      return {
        async call() {
          for (let attempt = 1; ; attempt++) {
            try {
              await send(attempt, '', AbortSignal.timeout(ATTEMPT_TIMEOUT_MS));
              return { ok: true, sent: attempt };
            } catch (error) {
              if (attempt > NAIVE_RETRIES || !isRetriable(error)) return { ok: false, sent: attempt };
            }
          }
        },
        close: async () => undefined,
      };

    case 'cockatiel': {
      // Per-process cockatiel: retry (exponential backoff, the policy's attempts, base and cap)
      // around a circuit breaker with the policy's thresholds, so every attempt is counted by the
      // breaker and an open breaker ends the retries. Open durations double as Sluice's do.
      const { breaker: b, retryBudget, backoff } = POLICY;
      const breaker = circuitBreaker(
        handleWhen((error) => isRetriable(error)),
        {
          halfOpenAfter: new ExponentialBackoff({
            generator: noJitterGenerator,
            initialDelay: b.openMs,
            maxDelay: b.maxOpenMs,
          }),
          breaker: new SamplingBreaker({
            threshold: b.failureRateThreshold,
            duration: b.windowSeconds * 1000,
            minimumRps: b.minimumCalls / b.windowSeconds,
          }),
        },
      );
      breaker.onHalfOpen(() => {
        seen.halfOpenPeriods++;
        seen.transitions.push([at(), 'half_open', 'local']);
      });
      breaker.onBreak(() => {
        seen.opens++;
        seen.transitions.push([at(), 'open', 'local']);
      });
      breaker.onReset(() => seen.transitions.push([at(), 'closed', 'local']));
      const retries = retry(
        handleWhen((error) => !(error instanceof BrokenCircuitError) && isRetriable(error)),
        {
          maxAttempts: retryBudget.maxAttempts - 1, // cockatiel counts retries; the policy counts attempts
          backoff: new ExponentialBackoff({ initialDelay: backoff.baseMs, maxDelay: backoff.capMs }),
        },
      );
      const policy = wrap(retries, breaker);
      return {
        async call() {
          let sent = 0;
          try {
            await policy.execute(() => {
              sent++;
              const probe = breaker.state === CircuitState.HalfOpen;
              if (probe) seen.probesSent++;
              return send(sent, probe ? 'local' : '', AbortSignal.timeout(ATTEMPT_TIMEOUT_MS));
            });
            return { ok: true, sent };
          } catch (error) {
            if (error instanceof BrokenCircuitError) countGiveUp('breaker_open');
            return { ok: false, sent };
          }
        },
        close: async () => undefined,
      };
    }

    case 'local-budget':
    case 'sluice-fixed':
    case 'sluice-adaptive': {
      const require = createRequire(import.meta.url);
      const { Sluice, isGiveUpError } = require(join(ROOT, 'dist/libs/client/src/index.js'));
      const local = strategy === 'local-budget';
      const sluice = new Sluice({
        // local-budget: a coordinator address nothing listens on, so the SDK decides locally
        // from the start (the fallback mode), with the policy given as its fallbackPolicy.
        baseUrls: config.coordinatorUrls,
        namespace: config.namespace,
        reporter: `caller-${id}`,
        logger: false,
        reportIntervalMs: REPORT_INTERVAL_MS,
        ...(config.decisionTimeoutMs ? { decisionTimeoutMs: config.decisionTimeoutMs } : {}),
      });
      sluice.onBreak(({ source }) => {
        seen.opens++;
        seen.transitions.push([at(), 'open', source]);
      });
      sluice.onHalfOpen(({ source }) => {
        seen.halfOpenPeriods++;
        seen.transitions.push([at(), 'half_open', source]);
      });
      sluice.onReset(({ to, source }) => seen.transitions.push([at(), to, source]));
      // Who granted each retry: the coordinator, or the local fallback (the SDK asks the coordinator
      // unless it is in the fallback, and a failed ask puts it there before it decides locally).
      sluice.onRetry(() => {
        if (origin === undefined) return;
        const bin = Math.floor((performance.now() - origin) / BIN_MS);
        if (bin < 0 || bin >= bins) return;
        if (local || sluice.fallbackActive) calls.localGrants[bin]++;
        else calls.fleetGrants[bin]++;
      });
      sluice.onFallback(({ active, during, error }) => {
        if (!active) return;
        seen.fallbackSwitches++;
        seen.fallbackAtMs.push(origin === undefined ? null : Math.round(performance.now() - origin));
        const why = `${during}: ${error?.message ?? error}`;
        seen.fallbackCauses[why] = (seen.fallbackCauses[why] ?? 0) + 1;
      });
      const dependency = sluice.dependency(DEPENDENCY, {
        idempotent: true,
        maxAttempts: POLICY.retryBudget.maxAttempts,
        deadlineMs: CALL_DEADLINE_MS,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
        classify: (error) =>
          error instanceof DependencyError ? { status: error.status, retryAfterMs: error.retryAfterMs } : undefined,
        ...(local ? { fallbackPolicy: POLICY } : {}),
      });
      // Ready when the SDK decides as this strategy means it to: locally, or with the coordinator.
      const deadline = Date.now() + 10_000;
      while (sluice.fallbackActive !== local) {
        if (Date.now() > deadline) throw new Error(`the SDK did not settle in ${local ? 'fallback' : 'fleet'} mode`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (local) {
        // The switch the strategy is made of.
        seen.fallbackSwitches = 0;
        seen.fallbackCauses = {};
        seen.fallbackAtMs = [];
      }
      return {
        async call() {
          let sent = 0;
          try {
            await dependency.execute((attempt) => {
              sent++;
              // Outside a closed breaker, the SDK lets a call out only as a half-open probe: the
              // fleet's (a lease from the coordinator), or the local breaker's in the fallback.
              let probe = '';
              if (dependency.breakerState !== 'closed') {
                seen.probesSent++;
                probe = local ? 'local' : sluice.fallbackActive ? 'fallback' : 'fleet';
              }
              return send(attempt.attempt, probe, attempt.signal);
            });
            return { ok: true, sent };
          } catch (error) {
            if (isGiveUpError(error)) countGiveUp(error.reason);
            return { ok: false, sent };
          }
        },
        close: () => sluice.close(),
      };
    }
    default:
      throw new Error(`unknown strategy ${strategy}`);
  }
}

const lengthMs = scenarioMs(phases);
const bins = Math.ceil(lengthMs / BIN_MS);
const series = () => new Array(bins).fill(0);
/**
 * Per bin of the call's scheduled start: calls offered, succeeded, failed, rejected unsent, and
 * requests sent; per bin of the grant: retries granted by the coordinator or by the local fallback.
 */
const calls = {
  offered: series(),
  ok: series(),
  failed: series(),
  rejected: series(),
  sent: series(),
  fleetGrants: series(),
  localGrants: series(),
};

const strategyRun = await makeStrategy();
// Warm-up before the start: connections open, the SDK's stream and views in place.
for (let i = 0; i < 3; i++) await strategyRun.call();
await new Promise((resolve) => setTimeout(resolve, 300));

const loopDelay = monitorEventLoopDelay({ resolution: 10 });

function start(t0) {
  origin = performance.now() + (t0 - Date.now());
  const interval = 1000 / rate;
  let k = 0;
  let pending = 0;
  let scheduled = true;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const fire = (at) => {
    const bin = Math.floor(at / BIN_MS);
    calls.offered[bin]++;
    pending++;
    strategyRun.call().then(({ ok, sent }) => {
      calls.sent[bin] += sent;
      if (ok) calls.ok[bin]++;
      else if (sent === 0) calls.rejected[bin]++;
      else calls.failed[bin]++;
      if (--pending === 0 && !scheduled) finish();
    });
  };
  const tick = () => {
    const now = performance.now() - origin;
    let next = offsetMs + k * interval;
    while (next < lengthMs && next <= now) {
      fire(next);
      next = offsetMs + ++k * interval;
    }
    if (next < lengthMs) {
      setTimeout(tick, Math.max(0, next - (performance.now() - origin)));
    } else {
      scheduled = false;
      if (pending === 0) finish();
    }
  };
  setTimeout(tick, Math.max(0, offsetMs - (performance.now() - origin)));
  loopDelay.enable();
  return finished;
}

process.on('message', async (message) => {
  if (message.type === 'start') {
    await start(message.t0);
    loopDelay.disable();
    process.send({
      type: 'result',
      id,
      calls,
      seen,
      loopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e6),
    });
  } else if (message.type === 'stop') {
    await strategyRun.close();
    agent.destroy();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', id });
