// The packed SDK, required: one call whose first attempt fails with a 503, retried on the grant of
// the coordinator at SLUICE_URL. Prints what happened as one JSON line.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- this file checks the package through require
const { Sluice } = require('@sluice/client');

async function main() {
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
  console.log(JSON.stringify({ loader: 'require', node: process.version, answer, retries }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
