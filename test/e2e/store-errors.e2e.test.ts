import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';
import { RedisServerProcess } from '../support/redis-server';
import { waitUntil } from '../support/time';

// Every Redis connection the built service opens has its errors handled: when Redis goes away, the
// service logs it (`redis: …`), and ioredis never prints an unhandled error event of its own.
// A child process, as in production: errors from Node's sockets are of another realm inside jest.
describe('the built service when its Redis is killed', () => {
  const server = new RedisServerProcess();
  let coordinator: CoordinatorProcess | undefined;

  beforeAll(async () => {
    await server.start();
    coordinator = await startCoordinatorProcess(await findFreePort(), { SLUICE_REDIS_URL: server.url });
  });

  afterAll(async () => {
    await coordinator?.kill();
    await server.cleanup();
  });

  it('logs the lost connection, and no connection is left without an error listener', async () => {
    // An idempotency claim, so the connection that waits for replicas has carried a call too.
    const claim = await fetch(`${coordinator!.url}/v1/shop/idempotency/k-1/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fingerprint: 'f' }),
    });
    expect(claim.status).toBe(201);

    await server.kill();
    await waitUntil(
      () => /"msg":"waiting for Redis at redis:\/\/127\.0\.0\.1:\d+ \(/.test(coordinator!.output()),
      10_000,
      () => `the service logged no lost connection:\n${coordinator!.output()}`,
    );
    // A few more reconnect attempts (about one each 500 ms) on every connection, said once.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(coordinator!.output()).not.toContain('Unhandled error event');
    expect(coordinator!.output().match(/waiting for Redis/g)).toHaveLength(1);
  });
});
