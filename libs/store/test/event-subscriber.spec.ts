import { Redis } from 'ioredis';
import { createRedisSubscriber, type StoreEvent } from '../src';
import { RedisEventSubscriber } from '../src/redis/event-subscriber';
import { StoreUnavailableError } from '../src/errors';
import { findFreePorts } from '../../../test/support/ports';
import { RedisServerProcess, redisCli } from '../../../test/support/redis-server';
import { waitUntil } from '../../../test/support/time';

/** A private server: its pub/sub connections are cut and its ACL changed here, never the shared one's. */
let server: RedisServerProcess;
let publisher: Redis;
beforeAll(async () => {
  server = await RedisServerProcess.start();
  publisher = new Redis(server.url, { protocol: 2 });
});
afterAll(async () => {
  publisher?.disconnect();
  await server?.cleanup();
});

let sequence = 0;
const channel = () => `t:events:{dep-${++sequence}}:events`;
const subscribersOf = async (name: string) =>
  Number(((await publisher.call('PUBSUB', 'SHARDNUMSUB', name)) as [string, number])[1]);
const breakerEvent = { type: 'breaker', dep: 'd', from: 'closed', state: 'open', since: 1, openUntil: 2, reason: null };

/** Publishes until `events` holds a breaker event (a message sent before the subscription lands is lost). */
async function expectDelivered(name: string, events: StoreEvent[]): Promise<void> {
  await publisher.call('SPUBLISH', name, JSON.stringify(breakerEvent));
  await waitUntil(
    () => events.some((event) => event.type === 'breaker'),
    2000,
    () => `nothing arrived on ${name}`,
  );
}

describe('RedisEventSubscriber', () => {
  it('answers a second concurrent subscribe only once Redis has confirmed the SSUBSCRIBE', async () => {
    const subscriber = new RedisEventSubscriber(createRedisSubscriber({ url: server.url, commandTimeoutMs: 2000 }));
    const name = channel();
    const first = subscriber.subscribe(name, () => undefined);
    await subscriber.subscribe(name, () => undefined);
    expect(await subscribersOf(name)).toBe(1);
    await first;
    subscriber.close();
  });

  it('asks Redis again after a refused SSUBSCRIBE, so the channel is not left unsubscribed', async () => {
    await redisCli(server.port, ['ACL', 'SETUSER', 'limited', 'on', '>secret-pass', '~*', 'resetchannels', '+@all']);
    const url = `redis://limited:secret-pass@127.0.0.1:${server.port}`;
    const subscriber = new RedisEventSubscriber(createRedisSubscriber({ url, commandTimeoutMs: 2000 }));
    const name = channel();
    await expect(subscriber.subscribe(name, () => undefined)).rejects.toThrow(/NOPERM/);
    await redisCli(server.port, ['ACL', 'SETUSER', 'limited', 'allchannels']);
    const events: StoreEvent[] = [];
    await subscriber.subscribe(name, (event) => events.push(event));
    expect(await subscribersOf(name)).toBe(1);
    await expectDelivered(name, events);
    subscriber.close();
  });

  it('subscribes again after a lost connection and tells every handler to resync', async () => {
    const subscriber = new RedisEventSubscriber(createRedisSubscriber({ url: server.url, commandTimeoutMs: 2000 }));
    const name = channel();
    const events: StoreEvent[] = [];
    await subscriber.subscribe(name, (event) => events.push(event));
    await redisCli(server.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    await waitUntil(
      () => events.some((event) => event.type === 'resync'),
      5000,
      () => 'no resync after the reconnect',
    );
    expect(await subscribersOf(name)).toBe(1);
    await expectDelivered(name, events);
    subscriber.close();
  });

  it('asks again for a resubscription Redis refused, while the connection stays up', async () => {
    await redisCli(server.port, ['ACL', 'SETUSER', 'flaky', 'on', '>secret-pass', '~*', 'allchannels', '+@all']);
    const url = `redis://flaky:secret-pass@127.0.0.1:${server.port}`;
    const subscriber = new RedisEventSubscriber(createRedisSubscriber({ url, commandTimeoutMs: 2000 }));
    const name = channel();
    const events: StoreEvent[] = [];
    await subscriber.subscribe(name, (event) => events.push(event));
    // Taking the channels away drops the subscriber; it reconnects, and its SSUBSCRIBE is refused.
    await redisCli(server.port, ['ACL', 'SETUSER', 'flaky', 'resetchannels']);
    await waitUntil(
      async () => (await redisCli(server.port, ['ACL', 'LOG'])).includes(name),
      2000,
      () => 'the resubscription was never refused',
    );
    await redisCli(server.port, ['ACL', 'SETUSER', 'flaky', 'allchannels']);
    await waitUntil(
      () => events.some((event) => event.type === 'resync'),
      5000,
      () => 'never subscribed again',
    );
    expect(await subscribersOf(name)).toBe(1);
    await expectDelivered(name, events);
    subscriber.close();
  });

  it('answers store unavailable, not never, when no Redis answers the SSUBSCRIBE', async () => {
    const [port] = await findFreePorts(1);
    const subscriber = new RedisEventSubscriber(
      createRedisSubscriber({ url: `redis://127.0.0.1:${port}`, commandTimeoutMs: 2000 }),
    );
    // Nothing listens on the port: the SSUBSCRIBE waits in ioredis's offline queue until the bound.
    await expect(subscriber.subscribe(channel(), () => undefined)).rejects.toBeInstanceOf(StoreUnavailableError);
    subscriber.close();
  });

  it('answers store unavailable while Redis is stalled, and subscribes once it is back', async () => {
    const stalled = await RedisServerProcess.start();
    try {
      const subscriber = new RedisEventSubscriber(createRedisSubscriber({ url: stalled.url, commandTimeoutMs: 2000 }));
      const name = channel();
      await subscriber.subscribe(channel(), () => undefined); // connected and working
      stalled.pause();
      await expect(subscriber.subscribe(name, () => undefined)).rejects.toBeInstanceOf(StoreUnavailableError);
      stalled.resume();
      const events: StoreEvent[] = [];
      await subscriber.subscribe(name, (event) => events.push(event));
      const stalledPublisher = new Redis(stalled.url, { protocol: 2 });
      await stalledPublisher.call('SPUBLISH', name, JSON.stringify(breakerEvent));
      stalledPublisher.disconnect();
      await waitUntil(
        () => events.some((event) => event.type === 'breaker'),
        2000,
        () => `nothing arrived on ${name}`,
      );
      subscriber.close();
    } finally {
      stalled.resume();
      await stalled.cleanup();
    }
  });
});
