import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { findFreePort } from '../support/ports';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../support/redis';
import { waitUntil } from '../support/time';

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, ...env }, stdio: 'pipe' });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('the built service (npm run build)', () => {
  const started: Started[] = [];
  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first (npm test does)`);
  });
  afterAll(async () => {
    for (const { child, exited } of started) {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    }
  });

  it('finds its Lua scripts and decides on Redis', async () => {
    const port = await findFreePort();
    const keyPrefix = uniquePrefix('built');
    const service = run({
      SLUICE_PORT: String(port),
      SLUICE_REDIS_URL: SHARED_REDIS_URL,
      SLUICE_KEY_PREFIX: keyPrefix,
    });
    started.push(service);
    const base = `http://127.0.0.1:${port}`;
    await waitUntil(
      async () => (await fetch(`${base}/health/ready`).catch(() => undefined))?.status === 200,
      15_000,
      () => `the built service never became ready:\n${service.output()}`,
    );
    const res = await fetch(`${base}/v1/shop/deps/pay/retry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ attempt: 1, idempotent: true }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ allow: true, reason: 'granted', budget: { retries: 1 } });
    const claim = await fetch(`${base}/v1/shop/idempotency/order-1/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fingerprint: 'sha256:x' }),
    });
    expect(claim.status).toBe(201);
    // A script with an include (dead_letters) is found too.
    const attempt = await fetch(`${base}/v1/shop/queues/orders/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messageId: 'm-1' }),
    });
    expect(await attempt.json()).toMatchObject({ attempt: 1, maxAttempts: 5, deadLetter: false });
    expect(service.output()).toContain('AUTHENTICATION IS OFF');
    const client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    try {
      expect(await client.exists(`${keyPrefix}:{shop/pay}:budget`)).toBe(1);
      // Stopped first: a running service writes its keys again (its store epoch).
      service.child.kill('SIGTERM');
      await service.exited;
      await deleteKeysWithPrefix(client, keyPrefix);
      expect(await client.keys(`${keyPrefix}:*`)).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  it('says it runs on the embedded store when no Redis is configured', async () => {
    const port = await findFreePort();
    const service = run({ SLUICE_PORT: String(port) });
    started.push(service);
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200,
      15_000,
      () => `the built service never became ready:\n${service.output()}`,
    );
    expect(service.output()).toContain('embedded single-process store');
  });

  it('stops at boot on a bad value, naming the variable', async () => {
    const service = run({ SLUICE_STORE_TIMEOUT_MS: 'soon' });
    started.push(service);
    expect(await service.exited).toBe(78);
    expect(service.output()).toContain('SLUICE_STORE_TIMEOUT_MS');
  });
});
