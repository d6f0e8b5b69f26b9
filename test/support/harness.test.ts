import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { findFreePorts } from './ports';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from './redis';
import { RedisClusterProcess } from './redis-cluster';
import { RedisServerProcess } from './redis-server';
import { waitUntil } from './time';

// Like the service's decision-path clients: fail fast while disconnected, reconnect quickly.
const clientOptions: RedisOptions = {
  protocol: 2,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => 50,
};

/** Connects, and waits until commands can be sent (there is no offline queue). */
async function connect(url: string): Promise<Redis> {
  const client = new Redis(url, clientOptions);
  client.on('error', () => {}); // connection errors are expected in fault tests
  await ready(client);
  return client;
}

function ready(client: Redis): Promise<void> {
  return waitUntil(
    () => client.status === 'ready',
    5_000,
    () => `client not ready (${client.status})`,
  );
}

test('findFreePorts returns distinct ports', async () => {
  const ports = await findFreePorts(5);
  expect(new Set(ports).size).toBe(5);
  for (const port of ports) expect(port).toBeGreaterThan(0);
});

describe('RedisServerProcess', () => {
  const server = new RedisServerProcess();
  let client: Redis;

  beforeAll(async () => {
    await server.start();
    client = await connect(server.url);
  });

  afterAll(async () => {
    client?.disconnect();
    await server.cleanup();
  });

  test('serves, goes away, and comes back on the same port', async () => {
    await client.set('greeting', 'hello');
    expect(await client.get('greeting')).toBe('hello');

    const { port } = server;
    await server.kill();
    expect(server.running).toBe(false);
    await expect(client.get('greeting')).rejects.toThrow();

    await server.start();
    expect(server.port).toBe(port);
    await ready(client); // the same client reconnects by itself
    expect(await client.get('greeting')).toBeNull(); // persistence is off: a restart starts empty
    expect(await client.ping()).toBe('PONG');
  });

  test('stop() is graceful and idempotent', async () => {
    await server.stop();
    await server.stop();
    await server.kill();
    expect(server.running).toBe(false);
    await server.start();
    await ready(client); // the same client reconnects by itself
    expect(await client.ping()).toBe('PONG');
  });
});

describe('RedisClusterProcess', () => {
  const cluster = new RedisClusterProcess();
  let client: Cluster;

  beforeAll(async () => {
    await cluster.start();
    const seeds = cluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) }));
    client = new Cluster(seeds, { redisOptions: clientOptions, enableOfflineQueue: false });
    client.on('error', () => {});
    await new Promise((resolve) => client.once('ready', resolve));
  });

  afterAll(async () => {
    client?.disconnect();
    await cluster.cleanup();
  });

  test('has three nodes', () => {
    expect(cluster.nodes).toHaveLength(3);
    expect(cluster.nodes.every((node) => /^127\.0\.0\.1:\d+$/.test(node))).toBe(true);
  });

  test('keys with different hash tags land on every master and read back', async () => {
    const prefix = uniquePrefix('cluster');
    const keys = Array.from({ length: 30 }, (_, i) => `${prefix}:{ns/dep-${i}}:budget`);
    for (const key of keys) await client.set(key, key);
    for (const key of keys) expect(await client.get(key)).toBe(key);

    const masters = client.nodes('master');
    expect(masters).toHaveLength(3);
    for (const master of masters) {
      if (master.status === 'wait') await master.connect();
      expect(await master.dbsize()).toBeGreaterThan(0);
    }

    expect(await deleteKeysWithPrefix(client, prefix)).toBe(keys.length);
    for (const key of keys) expect(await client.exists(key)).toBe(0);
  });
});

describe('shared Redis helpers', () => {
  let client: Redis;
  const prefix = uniquePrefix('harness');
  const other = uniquePrefix('harness');

  beforeAll(async () => {
    client = await connect(SHARED_REDIS_URL);
  });

  afterAll(async () => {
    await deleteKeysWithPrefix(client, other);
    client.disconnect();
  });

  test('deleteKeysWithPrefix removes only keys under the prefix', async () => {
    expect(prefix).toMatch(/^t:harness:[0-9a-f]{8}$/);
    expect(other).not.toBe(prefix);

    const pipeline = client.pipeline();
    for (let i = 0; i < 1_200; i++) pipeline.set(`${prefix}:{ns/dep-${i}}:budget`, '1', 'EX', 60);
    pipeline.set(`${other}:{ns/dep}:budget`, '1', 'EX', 60);
    await pipeline.exec();

    expect(await deleteKeysWithPrefix(client, prefix)).toBe(1_200);
    expect(await client.exists(`${prefix}:{ns/dep-0}:budget`)).toBe(0);
    expect(await client.exists(`${other}:{ns/dep}:budget`)).toBe(1);
  });
});
