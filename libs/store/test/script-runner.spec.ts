import { Redis } from 'ioredis';
import { PROBE_CONNECTION_NAME, ScriptRunner } from '../src/redis/script-runner';
import { RedisServerProcess, waitUntil } from '../../../test/support/redis-server';

describe('ScriptRunner on a standalone Redis', () => {
  // A server of its own: the test pauses its clients.
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
    (await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(` name=${PROBE_CONNECTION_NAME} `)).length;

  it('opens its probe connection with its first call, before any silence needs it', async () => {
    await waitUntil(() => client.status === 'ready', 5000);
    expect(await probeConnections()).toBe(0);
    await expect(runner.guard(client.ping())).resolves.toBe('PONG');
    // Open and ready before a burst can make the scripts' connection look silent.
    await waitUntil(async () => (await probeConnections()) === 1, 5000);
  });

  it('answers through a pause of Redis longer than the timeout: the probe is one round trip on the open connection', async () => {
    await admin.client('PAUSE', 80, 'ALL');
    await expect(runner.guard(client.echo('after the pause'))).resolves.toBe('after the pause');
    expect(await probeConnections()).toBe(1);
  });
});
