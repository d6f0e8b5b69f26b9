// A holder of an idempotency key that the crash test (test/e2e/idempotency-crash.e2e.test.ts)
// really kills. It uses the BUILT SDK (npm run build): dist/libs/client/src.
//
//   node crash-holder.mjs claim <coordinatorUrl> <namespace> <key> <leaseMs>
//     claims the key with the CoordinatorClient, prints {"event":"claimed",…} with the token,
//     then {"event":"working"}, and works forever (it never completes).
//   node crash-holder.mjs serve <coordinatorUrl> <namespace> <leaseMs> <hang|answer>
//     a node:http app whose POST /orders is made idempotent by the SDK's middleware; prints
//     {"event":"listening","url"} and, per run of the handler, {"event":"handling",…}. With `hang`
//     the handler never answers; with `answer` it answers 201 with a fresh nonce.
//
// Every event is one JSON line on stdout. The process ends when its stdin closes (the test
// runner went away) or after a watchdog, so a holder can never outlive its test.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { CoordinatorClient, expressIdempotency, idempotencyOf } = require('../../dist/libs/client/src/index.js');

const WATCHDOG_MS = 60_000;
const emit = (event) => process.stdout.write(`${JSON.stringify({ ...event, pid: process.pid })}\n`);
const forever = () => new Promise(() => {});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
setTimeout(() => process.exit(3), WATCHDOG_MS);

const [mode, coordinatorUrl, namespace, ...rest] = process.argv.slice(2);
const client = new CoordinatorClient({ baseUrl: coordinatorUrl, namespace });

if (mode === 'claim') {
  const [key, leaseMs] = rest;
  const claim = await client.claimIdempotencyKey(key, { fingerprint: 'sha256:crash', leaseMs: Number(leaseMs) });
  if (claim.state !== 'claimed') {
    emit({ event: 'refused', claim });
    process.exit(2);
  }
  emit({ event: 'claimed', key, token: claim.token, recovered: claim.recovered, leaseExpiresAt: claim.leaseExpiresAt });
  emit({ event: 'working' });
  await forever(); // the work that never finishes: the test kills this process here
  await client.completeIdempotencyKey(key, claim.token, { status: 200, headers: {}, body: 'unreachable' });
} else if (mode === 'serve') {
  const [leaseMs, behaviour] = rest;
  const idempotent = expressIdempotency(client, {
    leaseMs: Number(leaseMs),
    // This handler reconciles a recovered key (it reads idempotencyOf(request).recovered), so it opts in.
    onRecovered: 'run',
    onError: (error) => emit({ event: 'error', error: String(error) }),
  });
  let runs = 0;
  const handle = async (request, response) => {
    const run = ++runs;
    const context = idempotencyOf(request);
    emit({ event: 'handling', run, key: context?.key, recovered: context?.recovered });
    if (behaviour === 'hang') await forever();
    response.statusCode = 201;
    response.setHeader('content-type', 'application/json; charset=utf-8');
    response.setHeader('x-order-nonce', randomBytes(8).toString('hex'));
    response.end(
      JSON.stringify({
        orderId: `ord_${process.pid}_${run}`,
        recovered: context?.recovered ?? null,
        body: request.body,
      }),
    );
  };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      request.body = text ? JSON.parse(text) : undefined;
      if (request.method !== 'POST' || request.url !== '/orders') {
        response.statusCode = 404;
        return response.end();
      }
      idempotent(request, response, (error) => {
        if (error) {
          response.statusCode = 500;
          return response.end(String(error));
        }
        handle(request, response).catch((failure) => {
          response.statusCode = 500;
          response.end(String(failure));
        });
      });
    });
  });
  server.listen(0, '127.0.0.1', () => emit({ event: 'listening', url: `http://127.0.0.1:${server.address().port}` }));
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(64);
}
