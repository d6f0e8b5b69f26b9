// The packed SDK, imported by name from Node's ESM loader: the same call as smoke.cjs.
import { Sluice } from '@sluice/client';

// A decision may take longer than the default 50 ms on a loaded CI machine.
const sluice = new Sluice({
  baseUrls: [process.env.SLUICE_URL],
  namespace: 'packed',
  logger: false,
  decisionTimeoutMs: 1000,
});
const retries = [];
const inventory = sluice.dependency('inventory', { idempotent: true });
inventory.onRetry(({ attempt }) => retries.push(attempt));
const answer = await inventory.execute(async ({ attempt }) => {
  if (attempt === 1) throw Object.assign(new Error('unavailable'), { status: 503 });
  return `answered on attempt ${attempt}`;
});
await sluice.close();
console.log(JSON.stringify({ loader: 'import', node: process.version, answer, retries }));
