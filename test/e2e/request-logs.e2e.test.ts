import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findFreePorts } from '../support/ports';
import { waitUntil } from '../support/time';

// The built service's logs: one pino instance for Fastify and Nest, so every line is one JSON object
// on stdout, SLUICE_LOG_LEVEL applies to both, and a line written about a request (by the error
// filter, or by a service given the request's logger) carries that request's reqId.

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');

interface LogLine {
  level: number;
  msg: string;
  context?: string;
  reqId?: string;
}

interface Service {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function start(port: number, env: NodeJS.ProcessEnv): Service {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, SLUICE_PORT: String(port), ...env },
    stdio: 'pipe',
  });
  let stdout = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.resume();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, stdout: () => stdout, exited };
}

/** Every whole line written so far, each one JSON object. */
function lines(service: Service): LogLine[] {
  const stdout = service.stdout();
  return stdout
    .slice(0, stdout.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LogLine);
}

async function live(service: Service): Promise<void> {
  await waitUntil(
    async () => (await fetch(`${service.url}/health/live`).catch(() => undefined))?.status === 200,
    15_000,
    () => `the built service never answered /health/live:\n${service.stdout()}`,
  );
}

describe('the built service logs (npm run build)', () => {
  const services: Service[] = [];
  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first (npm test does)`);
  });
  afterAll(async () => {
    for (const { child, exited } of services) {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    }
  });

  it("writes the lines logged while serving a request with that request's id", async () => {
    // Nothing listens on the Redis port: every store call fails, and the service says so (the first of a
    // period with its request's id).
    const [port, deadRedis] = await findFreePorts(2);
    const service = start(port, {
      SLUICE_REDIS_URL: `redis://127.0.0.1:${deadRedis}`,
      SLUICE_STORE_TIMEOUT_MS: '200',
      SLUICE_LOG_LEVEL: 'info',
    });
    services.push(service);
    await live(service);

    const retry = await fetch(`${service.url}/v1/shop/deps/pay/retry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'logs-retry-1' },
      body: JSON.stringify({ attempt: 1, idempotent: true }),
    });
    expect(retry.status).toBe(503);
    expect(((await retry.json()) as { code: string }).code).toBe('store_unavailable');
    // More within the period are counted into one line at its end, not logged one by one.
    const more = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${service.url}/v1/shop/deps/pay/retry`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ attempt: 1, idempotent: true }),
        }).then((answer) => answer.status),
      ),
    );
    expect(new Set(more)).toEqual(new Set([503]));
    // The event stream's service logs its failure to the request's logger.
    const events = await fetch(`${service.url}/v1/shop/events`, { headers: { 'x-request-id': 'logs-events-1' } });
    await events.text();

    await waitUntil(
      () => lines(service).some((line) => line.context === 'Events'),
      5_000,
      () => `no event stream line:\n${service.stdout()}`,
    );
    const logged = lines(service);
    const filterLine = logged.find((line) => line.msg.startsWith('store unavailable on POST /v1/shop/deps/pay/retry'));
    expect(filterLine).toMatchObject({ level: 40, context: 'HttpError', reqId: 'logs-retry-1' });
    expect(logged.filter((line) => line.msg.startsWith('store unavailable on'))).toHaveLength(1);
    const serviceLine = logged.find((line) => line.msg.startsWith('event stream for shop failed'));
    expect(serviceLine).toMatchObject({ level: 40, context: 'Events', reqId: 'logs-events-1' });
    // Boot lines belong to no request.
    const bootLine = logged.find((line) => line.msg.startsWith('AUTHENTICATION IS OFF'));
    expect(bootLine).toMatchObject({ level: 40, context: 'Auth' });
    expect(bootLine?.reqId).toBeUndefined();
  });

  it('writes nothing below SLUICE_LOG_LEVEL, from Nest or from Fastify', async () => {
    const [port] = await findFreePorts(1);
    const service = start(port, { SLUICE_LOG_LEVEL: 'error' });
    services.push(service);
    await live(service);
    const res = await fetch(`${service.url}/v1/shop/deps/pay/retry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ attempt: 'one' }),
    });
    expect(res.status).toBe(400);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(lines(service).filter((line) => line.level < 50)).toEqual([]);
  });
});
