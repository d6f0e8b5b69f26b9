#!/usr/bin/env node
// The conformance driver of the TypeScript SDK (the root build's dist/libs/client): reads one run
// spec on stdin, runs its steps through one Sluice client, prints one JSON event per line.
// See test/conformance/README.md.
//
// CONFORMANCE_BREAK (comma-separated) makes it a broken client on purpose, to show the suite
// catches one: `drop-request-id` (asks reach the coordinator without their requestId),
// `no-feed` (the breaker feed is never read: no event stream, no polling), `no-coalesce`
// (one request per retry ask, no held denials), `fail-closed` (no local fallback).
import { createServer, request } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Sluice, isGiveUpError, isHttpStatusError } = require('../../../dist/libs/client/src/index.js');

const broken = new Set((process.env.CONFORMANCE_BREAK ?? '').split(',').filter(Boolean));
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const log = (message) => process.stderr.write(`typescript driver: ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function readSpec() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function main() {
  const spec = await readSpec();
  const shims = broken.has('drop-request-id') ? await Promise.all(spec.baseUrls.map(startIdDroppingShim)) : [];
  const options = spec.client ?? {};
  const sluice = new Sluice({
    baseUrls: shims.length ? shims.map((shim) => shim.url) : spec.baseUrls,
    namespace: spec.namespace,
    token: spec.token,
    reporter: spec.reporter,
    reportIntervalMs: options.reportIntervalMs,
    requestTimeoutMs: options.requestTimeoutMs,
    decisionTimeoutMs: options.decisionTimeoutMs,
    pollIntervalMs: broken.has('no-feed') ? 3_600_000 : options.pollIntervalMs,
    sse: !broken.has('no-feed'),
    coalesceRetryAsks: !broken.has('no-coalesce'),
    fallback: broken.has('fail-closed') ? 'fail-closed' : 'local',
    defaults: options.backoff ? { fallbackPolicy: { backoff: options.backoff } } : undefined,
    logger: { error: log, warn: log, info: log },
  });
  // The dependency first: the client follows its breaker from the start.
  const base = sluice.dependency(spec.dependency);
  const policies = new Map();
  const policyFor = (maxAttempts) => {
    if (maxAttempts === undefined) return base;
    if (!policies.has(maxAttempts)) policies.set(maxAttempts, sluice.dependency(spec.dependency, { maxAttempts }));
    return policies.get(maxAttempts);
  };
  try {
    await sluice.ready();
  } catch (error) {
    log(`start check: ${error.message}`);
  }
  emit({ event: 'ready' });

  const call = async (step) => {
    const policy = policyFor(step.maxAttempts);
    let attempts = 0;
    let status = null;
    // The SDK's fetch integration, through the policy, counting the attempts it sends.
    const counted = {
      options: policy.options,
      execute: (fn, executeOptions) =>
        policy.execute((context) => {
          attempts = Math.max(attempts, context.attempt);
          return fn(context).then(
            (response) => {
              status = response.status;
              return response;
            },
            (error) => {
              if (isHttpStatusError(error)) status = error.status;
              throw error;
            },
          );
        }, executeOptions),
    };
    const init = { method: step.method ?? 'GET' };
    if (step.idempotent !== undefined) init.idempotent = step.idempotent;
    if (step.idempotencyKey !== undefined) init.idempotencyKey = step.idempotencyKey;
    if (step.deadlineMs !== undefined) init.deadlineMs = step.deadlineMs;
    try {
      const response = await sluice.fetch(counted, `${spec.targetUrl}${step.path}`, init);
      await response.arrayBuffer();
      if (response.status >= 200 && response.status < 300) {
        emit({ event: 'call', id: step.id, ok: true, status: response.status, attempts });
      } else {
        // A status the SDK does not retry is the caller's answer.
        emit({
          event: 'call',
          id: step.id,
          ok: false,
          reason: 'not_retriable',
          status: response.status,
          attempts,
          operatorReason: null,
          message: `the dependency answered ${response.status}`,
        });
      }
    } catch (error) {
      const reason = isGiveUpError(error) ? error.reason : 'not_retriable';
      emit({
        event: 'call',
        id: step.id,
        ok: false,
        reason,
        status,
        attempts,
        operatorReason: error.operatorReason ?? null,
        message: String(error.message ?? error),
      });
    }
  };

  const waitFor = async (read, expected, timeoutMs) => {
    const until = Date.now() + (timeoutMs ?? 3000);
    while (read() !== expected && Date.now() < until) await sleep(10);
    return read() === expected;
  };

  for (const step of spec.steps) {
    switch (step.op) {
      case 'call':
        await call(step);
        break;
      case 'concurrent':
        await Promise.all(step.calls.map(call));
        break;
      case 'sleep':
        await sleep(step.ms);
        break;
      case 'wait_breaker': {
        const reached = await waitFor(() => base.breakerState, step.state, step.timeoutMs);
        emit({ event: 'breaker', state: base.breakerState, ...(reached ? {} : { timedOut: true }) });
        break;
      }
      case 'wait_mode': {
        const mode = () => (sluice.status().fallbackActive ? 'fallback' : 'fleet');
        const reached = await waitFor(mode, step.mode, step.timeoutMs);
        emit({ event: 'mode', mode: mode(), ...(reached ? {} : { timedOut: true }) });
        break;
      }
      default:
        log(`unknown step ${JSON.stringify(step)}`);
    }
  }
  await sluice.close();
  await Promise.all(shims.map((shim) => shim.close()));
  emit({ event: 'done' });
}

/** A broken client's transport: a local hop that strips every `requestId` from what it forwards. */
async function startIdDroppingShim(target) {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (body.length > 0) {
        try {
          const json = JSON.parse(body.toString('utf8'));
          delete json.requestId;
          for (const ask of json.asks ?? []) delete ask.requestId;
          body = Buffer.from(JSON.stringify(json));
        } catch {
          // not JSON: as it is
        }
      }
      const headers = { ...req.headers, 'content-length': String(body.length) };
      if (chunks.length === 0) delete headers['content-length'];
      const onward = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      onward.on('error', () => res.destroy());
      res.on('close', () => onward.destroy());
      onward.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

main().catch((error) => {
  log(error.stack ?? String(error));
  process.exitCode = 1;
});
