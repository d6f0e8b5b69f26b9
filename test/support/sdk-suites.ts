import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { CoordinatorClient, deliveries, idempotentFetch, isLeaseLostError, type DeliveryOutcome } from '@sluice/client';
import { startExampleApp, type RunningExampleApp } from '../example/orders-app';
import type { SluiceConfig } from '../../apps/coordinator/src/config/config';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from './redis';
import { waitUntil } from './time';
import { testCoordinator } from './test-coordinator';

/** Two coordinator URLs sharing one state (one URL twice for the embedded store). */
export interface Coordinators {
  urls: [string, string];
  /** Waits until the store's clock (Redis's TIME, or this process's) is past `instant`. */
  waitPast(instant: number): Promise<void>;
  close(): Promise<void>;
}

/** Queue policies the delivery suite expects the coordinators to run with. */
const DELIVERY_POLICIES = { namespaces: { shop: { queues: { orders: { maxAttempts: 3 } } } } };

/**
 * Coordinators for the suites: one on the embedded store (its URL twice), or two sharing Redis
 * (standalone or Cluster) under a fresh key prefix, deleted on close.
 */
export async function startCoordinators(
  store: 'embedded' | Pick<SluiceConfig, 'redisUrl' | 'redisClusterNodes'>,
): Promise<Coordinators> {
  const embedded = store === 'embedded';
  const fixture = await testCoordinator({
    label: 'sdk',
    listen: true,
    instances: embedded ? 1 : 2,
    policies: DELIVERY_POLICIES,
    ...(embedded ? {} : { redis: store.redisUrl, config: { redisClusterNodes: store.redisClusterNodes } }),
  });
  const [a, b = a] = fixture.instances;
  return { urls: [a.url, b.url], waitPast: fixture.waitPast, close: () => fixture.close() };
}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

async function answer(response: Response): Promise<Answer> {
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

const json = (answer: Answer) => JSON.parse(answer.bytes.toString('utf8'));

/**
 * The example Nest app, two instances, against coordinators from `start`: exactly once under a
 * storm, replays byte for byte, 400/409/422, retention, crash recovery and transient outcomes.
 */
export function describeIdempotentApp(label: string, start: () => Promise<Coordinators>): void {
  describe(`@Idempotent() example app, two instances (${label})`, () => {
    const counterPrefix = uniquePrefix('example');
    const errors: unknown[] = [];
    let release: () => void = () => {};
    const hang = new Promise<void>((resolve) => (release = resolve));
    let orders: Promise<void> = Promise.resolve();
    const gate = (route: 'orders' | 'hang', run: number) =>
      route === 'orders' ? orders : run === 1 ? hang : Promise.resolve();
    let coordinators: Coordinators;
    let apps: [RunningExampleApp, RunningExampleApp];
    let redis: Redis;

    const counter = async (route: string) => Number((await redis.get(`${counterPrefix}:${route}`)) ?? 0);
    const post = async (app: RunningExampleApp, path: string, key?: string, body: object = {}) =>
      answer(
        await fetch(`${app.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
          body: JSON.stringify(body),
        }),
      );
    const newKey = () => `key-${randomBytes(6).toString('hex')}`;

    beforeAll(async () => {
      redis = new Redis(SHARED_REDIS_URL, { protocol: 2 });
      coordinators = await start();
      const options = {
        namespace: 'shop',
        redisUrl: SHARED_REDIS_URL,
        counterPrefix,
        gate,
        onError: (e: unknown) => errors.push(e),
        // The apps and coordinators share this test's event loop: under a whole run's load, one of
        // 119 simultaneous requests once answered 503, which is what the app answers when a claim
        // gets no answer within its client's default 2 s. These tests are about what runs once and
        // what replays, not about how long a claim may take.
        coordinatorTimeoutMs: 10_000,
      };
      apps = [
        await startExampleApp({ ...options, coordinatorUrl: coordinators.urls[0] }),
        await startExampleApp({ ...options, coordinatorUrl: coordinators.urls[1] }),
      ];
    });
    afterAll(async () => {
      release();
      await Promise.all(apps?.map((app) => app.close()) ?? []);
      await coordinators?.close();
      await deleteKeysWithPrefix(redis, counterPrefix);
      redis.disconnect();
    });

    it('runs the handler once under 100 concurrent identical requests split across both instances', async () => {
      const key = newKey();
      const body = { sku: 'A-1', qty: 2 };
      // The handler that wins the claim waits until the 99 others have been answered.
      let open: () => void = () => {};
      orders = new Promise((resolve) => (open = resolve));
      const answered: Answer[] = [];
      const pending = Array.from({ length: 100 }, (_, i) =>
        post(apps[i % 2], '/orders', key, body).then((a) => {
          answered.push(a);
          return a;
        }),
      );
      await waitUntil(
        () => answered.length >= 99,
        10_000,
        () => `${answered.length} answers`,
      );
      open();
      const answers = await Promise.all(pending);
      orders = Promise.resolve();
      expect(await counter('orders')).toBe(1);
      const originals = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
      expect(originals).toHaveLength(1);
      const [original] = originals;
      expect(json(original)).toMatchObject({ orderId: 'ord_1', sku: 'A-1', qty: 2 });
      const inFlight = answers.filter((a) => a.status === 409);
      for (const a of answers) {
        if (a.status === 409) {
          expect(json(a)).toMatchObject({ statusCode: 409, code: 'in_flight', retryAfterMs: expect.any(Number) });
          expect(a.headers.get('retry-after')).toMatch(/^\d+$/);
          continue;
        }
        expect(a.status).toBe(201);
        expect(a.bytes.equals(original.bytes)).toBe(true);
        expect(a.headers.get('x-order-nonce')).toBe(original.headers.get('x-order-nonce'));
        expect(a.headers.get('content-type')).toBe(original.headers.get('content-type'));
      }
      // The SDK's retry of a 409 ends in the replay, byte for byte.
      const retried = await Promise.all(
        inFlight.map((_, i) =>
          idempotentFetch(
            `${apps[i % 2].url}/orders`,
            { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
            { idempotencyKey: key },
          ).then(answer),
        ),
      );
      // And so does a second wave of plain requests, now that the key is completed.
      const wave = await Promise.all(Array.from({ length: 20 }, (_, i) => post(apps[i % 2], '/orders', key, body)));
      expect(inFlight).toHaveLength(99);
      for (const a of [...retried, ...wave]) {
        expect(a.status).toBe(201);
        expect(a.headers.get('idempotent-replayed')).toBe('true');
        expect(a.bytes.equals(original.bytes)).toBe(true);
        expect(a.headers.get('x-order-nonce')).toBe(original.headers.get('x-order-nonce'));
      }
      expect(await counter('orders')).toBe(1);
    });

    it('answers 422 to the same key with another body, without running the handler', async () => {
      const key = newKey();
      expect((await post(apps[0], '/orders', key, { sku: 'A-1', qty: 1 })).status).toBe(201);
      const before = await counter('orders');
      const refused = await post(apps[1], '/orders', key, { sku: 'A-1', qty: 5 });
      expect(refused.status).toBe(422);
      expect(json(refused)).toMatchObject({ code: 'fingerprint_mismatch' });
      // Key order in the JSON body does not make another request.
      expect((await post(apps[1], '/orders', key, { qty: 1, sku: 'A-1' })).headers.get('idempotent-replayed')).toBe(
        'true',
      );
      expect(await counter('orders')).toBe(before);
    });

    it('answers 400 naming Idempotency-Key when a required key is missing or malformed', async () => {
      const missing = await post(apps[0], '/required');
      expect(missing.status).toBe(400);
      expect(json(missing)).toMatchObject({ code: 'validation_failed', details: [{ field: 'Idempotency-Key' }] });
      expect((await post(apps[0], '/required', 'bad key!')).status).toBe(400);
      expect(await counter('required')).toBe(0);
      expect((await post(apps[0], '/required', newKey())).status).toBe(201);
      // On a route where the key is optional, a request without one simply runs.
      expect((await post(apps[0], '/orders', undefined, { sku: 'B', qty: 1 })).status).toBe(201);
    });

    it('replays a binary body and custom headers exactly', async () => {
      const key = newKey();
      const first = await post(apps[0], '/files', key);
      expect(first.status).toBe(200);
      expect(first.bytes).toHaveLength(2048);
      const replay = await post(apps[1], '/files', key);
      expect(replay.status).toBe(200);
      expect(replay.bytes.equals(first.bytes)).toBe(true);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      for (const name of ['content-type', 'x-file-nonce', 'content-length']) {
        expect(replay.headers.get(name)).toBe(first.headers.get(name));
      }
      expect(replay.headers.getSetCookie()).toEqual(['session=abc; Path=/', 'theme=dark']);
      expect(first.headers.getSetCookie()).toEqual(replay.headers.getSetCookie());
      expect(await counter('files')).toBe(1);
    });

    it('runs the handler again once the key is past its retention', async () => {
      const key = newKey();
      expect(json(await post(apps[0], '/short', key))).toEqual({ run: 1 });
      expect(json(await post(apps[1], '/short', key))).toEqual({ run: 1 });
      const coordinator = new CoordinatorClient({ baseUrl: coordinators.urls[1], namespace: 'shop' });
      const kept = (await coordinator.readIdempotencyKey(key))!;
      expect(kept.expiresAt - kept.completedAt!).toBe(1000); // retentionSeconds: 1, on the store's clock
      await waitUntil(
        async () => (await coordinator.readIdempotencyKey(key)) === undefined,
        5000,
        () => 'the key was never forgotten',
      );
      const fresh = await post(apps[1], '/short', key);
      expect(json(fresh)).toEqual({ run: 2 });
      expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    });

    it('recovers a key whose holder vanished: the next request runs as recovered, the late completion is fenced', async () => {
      const key = newKey();
      const coordinator = new CoordinatorClient({ baseUrl: coordinators.urls[0], namespace: 'shop' });
      const abandoned = post(apps[0], '/hang', key);
      await waitUntil(
        async () => (await coordinator.readIdempotencyKey(key))?.state === 'in_flight',
        5000,
        () => 'the first request never claimed the key',
      );
      expect((await post(apps[1], '/hang', key)).status).toBe(409);
      const held = (await coordinator.readIdempotencyKey(key))!;
      expect(held.leaseExpiresAt! - held.createdAt).toBe(1000); // leaseMs: 1000, on the store's clock
      await coordinators.waitPast(held.leaseExpiresAt!); // the lease runs out
      const successor = await post(apps[1], '/hang', key);
      expect(successor.status).toBe(201);
      expect(json(successor)).toEqual({ run: 2, recovered: true });
      // The vanished holder comes back: its client gets its own answer, its completion is refused (lease_lost).
      const errorsBefore = errors.length;
      release();
      expect(json(await abandoned)).toEqual({ run: 1, recovered: false });
      expect(errors.slice(errorsBefore).some(isLeaseLostError)).toBe(true);
      const replay = await post(apps[0], '/hang', key);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(json(replay)).toEqual({ run: 2, recovered: true });
      expect(await counter('hang')).toBe(2);
    });

    it('releases the claim of a transient 503 and of an error marked as before any side effect', async () => {
      const flaky = newKey();
      expect((await post(apps[0], '/flaky', flaky)).status).toBe(503);
      const second = await post(apps[1], '/flaky', flaky);
      expect(second.status).toBe(201);
      expect(json(second)).toEqual({ run: 2 });
      expect((await post(apps[0], '/flaky', flaky)).headers.get('idempotent-replayed')).toBe('true');

      const guarded = newKey();
      expect((await post(apps[0], '/guarded', guarded)).status).toBe(502);
      expect(json(await post(apps[1], '/guarded', guarded))).toEqual({ run: 2 });
      expect(await counter('guarded')).toBe(2);
    });

    it('stores an error thrown after a side effect and replays it: the handler runs once', async () => {
      const key = newKey();
      const first = await post(apps[0], '/broken', key);
      expect(first.status).toBe(500);
      const replay = await post(apps[1], '/broken', key);
      expect(replay.status).toBe(500);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.bytes.equals(first.bytes)).toBe(true);
      expect(await counter('broken')).toBe(1);
    });
  });
}

/**
 * The SDK's queue consumer against coordinators from `start` (running with DELIVERY_POLICIES):
 * a poison message is dead-lettered and managed; a redelivered message runs its work once.
 */
export function describeDeliveryConsumer(label: string, start: () => Promise<Coordinators>): void {
  describe(`deliveries(queue).handle (${label})`, () => {
    let coordinators: Coordinators;
    let client: CoordinatorClient;
    const payload = { order: 7, lines: [{ sku: 'A-1', qty: 2 }], note: 'café', at: null };

    beforeAll(async () => {
      coordinators = await start();
      client = new CoordinatorClient({ baseUrl: coordinators.urls[0], namespace: 'shop' });
    });
    afterAll(() => coordinators?.close());

    it('dead-letters a message that always fails after maxAttempts, payload intact; lists, redrives and purges it', async () => {
      const orders = deliveries(client, 'orders');
      const message = { id: `poison-${randomBytes(4).toString('hex')}`, payload };
      let runs = 0;
      const fail = async () => {
        runs++;
        throw new Error(`cannot ship order ${runs}`);
      };
      const outcomes: DeliveryOutcome<never>[] = [];
      for (let i = 0; i < 3; i++) outcomes.push(await orders.handle(message, fail));
      expect(outcomes.map((o) => [o.status, o.ack])).toEqual([
        ['retry', false],
        ['retry', false],
        ['dead_lettered', true],
      ]);
      expect(outcomes[0]).toMatchObject({ attempt: 1, maxAttempts: 3, delayMs: expect.any(Number) });
      expect(runs).toBe(3);

      const page = await client.listDeadLetters('orders');
      const entry = page.items.find((item) => item.messageId === message.id);
      expect(entry).toEqual({
        id: message.id,
        messageId: message.id,
        payload,
        error: 'Error: cannot ship order 3',
        attempts: 3,
        deadLetteredAt: expect.any(Number),
        firstAttemptAt: expect.any(Number),
      });
      const redriven = await client.redriveDeadLetter('orders', message.id);
      expect(redriven).toEqual(entry);
      expect((await client.listDeadLetters('orders')).items.map((item) => item.id)).not.toContain(message.id);
      // The counter was reset: the redriven message gets its full attempts again.
      const again = await orders.handle(message, fail);
      expect(again).toMatchObject({ status: 'retry', attempt: 1 });
      await orders.handle(message, fail);
      expect(await orders.handle(message, fail)).toMatchObject({ status: 'dead_lettered', attempt: 3 });
      await client.purgeDeadLetter('orders', message.id);
      expect((await client.listDeadLetters('orders')).items.map((item) => item.id)).not.toContain(message.id);
    });

    it('acks a redelivered message whose work completed (its ack was lost) without running the work again', async () => {
      const orders = deliveries(client, 'orders');
      const message = { id: `twice-${randomBytes(4).toString('hex')}`, payload };
      let runs = 0;
      const ship = async (order: typeof payload) => {
        runs++;
        return `shipped ${order.order}`;
      };
      expect(await orders.handle(message, ship)).toEqual({
        status: 'processed',
        ack: true,
        value: 'shipped 7',
        recovered: false,
      });
      // The broker never heard the ack and delivers the message again, through another instance.
      const other = deliveries(new CoordinatorClient({ baseUrl: coordinators.urls[1], namespace: 'shop' }), 'orders');
      expect(await other.handle(message, ship)).toEqual({ status: 'duplicate', ack: true });
      expect(runs).toBe(1);
    });

    it('runs the work once when the same message is delivered to two consumers at once', async () => {
      const message = { id: `dup-${randomBytes(4).toString('hex')}`, payload };
      let runs = 0;
      let finish: () => void = () => {};
      const held = new Promise<void>((resolve) => (finish = resolve));
      const ship = async () => {
        runs++;
        await held;
        return 'ok';
      };
      const other = new CoordinatorClient({ baseUrl: coordinators.urls[1], namespace: 'shop' });
      const both = [
        deliveries(client, 'orders').handle(message, ship),
        deliveries(other, 'orders').handle(message, ship),
      ];
      // The consumer that lost the claim answers while the winner's work is held.
      expect(await Promise.race(both)).toMatchObject({ status: 'in_flight', ack: false, delayMs: expect.any(Number) });
      finish();
      const statuses = (await Promise.all(both)).map((outcome) => outcome.status).sort();
      expect(statuses).toEqual(['in_flight', 'processed']);
      expect(runs).toBe(1);
      expect(await deliveries(client, 'orders').handle(message, ship)).toMatchObject({ status: 'duplicate' });
    });
  });
}
