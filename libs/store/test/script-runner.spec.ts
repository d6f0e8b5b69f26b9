import { Redis } from 'ioredis';
import { PROBE_CONNECTION_NAME, ScriptRunner } from '../src/redis/script-runner';
import { RedisServerProcess } from '../../../test/support/redis-server';
import { waitUntil } from '../../../test/support/time';

describe('ScriptRunner on a standalone Redis', () => {
  // A server of its own: the test keeps it busy.
  const server = new RedisServerProcess();
  let client: Redis;
  let admin: Redis;
  let runner: ScriptRunner;

  beforeAll(async () => {
    await server.start();
    client = new Redis(server.url, { protocol: 2, enableAutoPipelining: true, enableOfflineQueue: false });
    admin = new Redis(server.url, { protocol: 2 });
    await admin.ping();
    runner = new ScriptRunner(client, 50);
  });

  afterAll(async () => {
    runner.close();
    client.disconnect();
    admin.disconnect();
    await server.cleanup();
  });

  const probeConnections = async () =>
    String(await admin.client('LIST'))
      .split('\n')
      .filter((line: string) => line.includes(` name=${PROBE_CONNECTION_NAME} `)).length;

  it('opens its probe connection with its first call, before any silence needs it', async () => {
    await waitUntil(
      () => client.status === 'ready',
      5000,
      () => `client ${client.status}`,
    );
    expect(await probeConnections()).toBe(0);
    await expect(runner.guard(client.ping())).resolves.toBe('PONG');
    // Open and ready before a burst can make the scripts' connection look silent.
    await waitUntil(
      async () => (await probeConnections()) === 1,
      5000,
      () => 'no probe connection',
    );
  });

  it('answers through a Redis busy for longer than the timeout: the probe is one round trip on the open connection', async () => {
    // A script that keeps Redis busy for 80 ms (CLIENT PAUSE ends only on Redis's next cron tick).
    const busy = admin.eval(
      "local t = redis.call('TIME'); local start = t[1] * 1e6 + t[2]; " +
        "repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - start >= 80000; return 1",
      0,
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(runner.guard(client.echo('after the busy script'))).resolves.toBe('after the busy script');
    await busy;
    expect(await probeConnections()).toBe(1);
  });
});
