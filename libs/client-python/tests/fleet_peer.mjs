// A TypeScript process of the fleet (the built SDK, dist/libs/client): reads commands on stdin,
// one JSON line each, and answers one JSON line each on stdout.
//   {"op": "fail", "calls": 6}  → calls whose every attempt fails with a 503, one after another
//   {"op": "call"}              → one call that would succeed; its outcome and attempts
//   {"op": "wait_breaker", "state": "forced_open"}
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);
const { Sluice, isGiveUpError } = require(process.env.SLUICE_SDK);

const spec = JSON.parse(process.argv[2]);
const sluice = new Sluice({
  baseUrls: spec.baseUrls,
  namespace: spec.namespace,
  token: spec.token,
  reporter: 'peer-ts',
  decisionTimeoutMs: 500,
  logger: false,
});
const dependency = sluice.dependency(spec.dep, { maxAttempts: 3 });
let grants = 0;
dependency.onRetry(() => grants++);
const failing = () => Object.assign(new Error('the dependency answered 503'), { status: 503 });
const outcome = async (fn) => {
  let attempts = 0;
  const counted = () => {
    attempts++;
    return fn();
  };
  try {
    await dependency.execute(counted, { idempotent: true, deadlineMs: 5000 });
    return { ok: true, attempts };
  } catch (error) {
    return {
      ok: false,
      reason: isGiveUpError(error) ? error.reason : 'other',
      operatorReason: error.operatorReason ?? null,
      attempts,
    };
  }
};
const lines = createInterface({ input: process.stdin });
lines.on('line', async (line) => {
  const command = JSON.parse(line);
  if (command.op === 'fail') {
    const reasons = [];
    for (let i = 0; i < command.calls; i++)
      reasons.push(
        (
          await outcome(() => {
            throw failing();
          })
        ).reason,
      );
    process.stdout.write(JSON.stringify({ grants, reasons }) + '\n');
  } else if (command.op === 'call') {
    process.stdout.write(JSON.stringify(await outcome(() => 'ok')) + '\n');
  } else if (command.op === 'wait_breaker') {
    const until = Date.now() + 5000;
    while (dependency.breakerState !== command.state && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    process.stdout.write(JSON.stringify({ state: dependency.breakerState }) + '\n');
  } else if (command.op === 'close') {
    await sluice.close();
    process.stdout.write('{}\n');
    process.exit(0);
  }
});
