import { createServer, connect, type Server, type Socket } from 'node:net';
import { RedisStore, SluiceKeys, createRedisClient } from '@sluice/store';
import { RedisServerProcess } from '../support/redis-server';
import { openEventStream } from '../support/sse';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';
import { sleep } from '../support/time';

/** A TCP proxy to Redis that can cut every connection through it and refuse new ones until restored. */
async function startRedisProxy(targetPort: number) {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    cut: () => {
      refusing = true;
      for (const socket of sockets) socket.destroy();
    },
    restore: () => (refusing = false),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('an event stream after its instance lost Redis for a while', () => {
  let redis: RedisServerProcess;
  let proxy: Awaited<ReturnType<typeof startRedisProxy>>;
  let coordinator: TestCoordinator;
  let direct: RedisStore;
  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    proxy = await startRedisProxy(redis.port);
    coordinator = await testCoordinator({ redis: proxy.url, listen: true });
    const client = createRedisClient({ url: redis.url, commandTimeoutMs: 2000 });
    direct = new RedisStore({ client, keys: new SluiceKeys(coordinator.keyPrefix), timeoutMs: 2000 });
    await direct.waitUntilReady(5000);
  });
  afterAll(async () => {
    await coordinator?.close();
    await direct?.close();
    await proxy?.close();
    await redis?.cleanup();
  });

  it('sends the breaker again once subscribed again: a trip made while it was cut off is not lost', async () => {
    const stream = await openEventStream(`${coordinator.url}/v1/shop/events?deps=payments-api`);
    await stream.next((frame) => frame.event === 'breaker');
    proxy.cut();
    // Published while the instance cannot hear it: only a fresh read after the reconnect can tell.
    await direct.setBreaker({ namespace: 'shop', dependency: 'payments-api' }, { action: 'trip', reason: 'drill' });
    await sleep(300);
    proxy.restore();
    const tripped = await stream.next(
      (frame) => frame.event === 'breaker' && (frame.data as { state: string }).state === 'forced_open',
      10_000,
    );
    expect(tripped.data).toMatchObject({ dep: 'payments-api', state: 'forced_open', openUntil: null });
    stream.close();
  });
});
