import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const POLICIES = {
  namespaces: {
    shop: {
      queueDefault: { maxAttempts: 4 },
      queues: { orders: { maxAttempts: 3, backoff: { baseMs: 100, capMs: 1000, jitter: 'none' } } },
    },
  },
};
const PAYLOAD = { order: 42, lines: [{ sku: 'A-1', qty: 2 }], note: 'café ☕', nothing: null, nested: { deep: [1.5] } };

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('delivery attempts and dead letters end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const CLIENT = bearer(SHOP_TOKEN);
  const ADMIN = bearer(ADMIN_TOKEN);
  const attempt = (queue: string, body: object) =>
    request(server).post(`/v1/shop/queues/${queue}/attempts`).set(CLIENT).send(body);
  const deadLetters = (queue: string) => `/admin/v1/shop/queues/${queue}/dead-letters`;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: useRedis,
      policies: POLICIES,
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] },
    });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('dead-letters a message that always fails after the queue maxAttempts, lists, redrives and purges it', async () => {
    const answers = [];
    for (let i = 1; i <= 3; i++) {
      const res = await attempt('orders', { messageId: 'poison-1', error: `boom ${i}`, payload: PAYLOAD }).expect(200);
      answers.push(res.body);
    }
    // Backoff from the queue's policy: 100 ms doubling, no jitter.
    expect(answers).toEqual([
      { attempt: 1, maxAttempts: 3, deadLetter: false, delayMs: 100 },
      { attempt: 2, maxAttempts: 3, deadLetter: false, delayMs: 200 },
      { attempt: 3, maxAttempts: 3, deadLetter: true, delayMs: 0 },
    ]);
    // Delivered again anyway: still parked, not counted, not listed twice.
    const again = await attempt('orders', { messageId: 'poison-1', error: 'boom 4', payload: PAYLOAD }).expect(200);
    expect(again.body).toEqual({ attempt: 3, maxAttempts: 3, deadLetter: true, delayMs: 0 });

    const listed = await request(server).get(deadLetters('orders')).set(ADMIN).expect(200);
    expect(listed.body).toEqual({
      items: [
        {
          id: 'poison-1',
          messageId: 'poison-1',
          payload: PAYLOAD,
          error: 'boom 3',
          attempts: 3,
          deadLetteredAt: expect.any(Number),
          firstAttemptAt: expect.any(Number),
        },
      ],
      next: null,
    });
    let metrics = (await request(server).get('/metrics').expect(200)).text;
    expect(metrics).toContain('sluice_dead_letters{namespace="shop",queue="orders"} 1');

    const redriven = await request(server)
      .post(`${deadLetters('orders')}/poison-1/redrive`)
      .set(ADMIN)
      .expect(200);
    expect(redriven.body).toEqual(listed.body.items[0]);
    expect((await request(server).get(deadLetters('orders')).set(ADMIN).expect(200)).body.items).toEqual([]);
    metrics = (await request(server).get('/metrics').expect(200)).text;
    expect(metrics).toContain('sluice_dead_letters{namespace="shop",queue="orders"} 0');
    // The counter was reset: the redriven message starts over at attempt 1.
    const fresh = await attempt('orders', { messageId: 'poison-1', error: 'boom', payload: PAYLOAD }).expect(200);
    expect(fresh.body).toMatchObject({ attempt: 1, deadLetter: false });
    await request(server)
      .post(`${deadLetters('orders')}/poison-1/redrive`)
      .set(ADMIN)
      .expect(404);

    for (let i = 0; i < 2; i++) await attempt('orders', { messageId: 'poison-1', payload: PAYLOAD }).expect(200);
    await request(server)
      .delete(`${deadLetters('orders')}/poison-1`)
      .set(ADMIN)
      .expect(204);
    await request(server)
      .delete(`${deadLetters('orders')}/poison-1`)
      .set(ADMIN)
      .expect(404);
    expect((await request(server).get(deadLetters('orders')).set(ADMIN).expect(200)).body).toEqual({
      items: [],
      next: null,
    });
  });

  it('takes the namespace default (and the API default) for a queue without a policy', async () => {
    const res = await attempt('emails', { messageId: 'm-1' }).expect(200);
    expect(res.body).toMatchObject({ attempt: 1, maxAttempts: 4, deadLetter: false });
    expect(res.body.delayMs).toBeGreaterThanOrEqual(0);
    expect(res.body.delayMs).toBeLessThanOrEqual(1000);
  });

  it('forgets the count on ack (204)', async () => {
    await attempt('orders', { messageId: 'acked' }).expect(200);
    await attempt('orders', { messageId: 'acked' }).expect(200);
    await request(server).post('/v1/shop/queues/orders/acks').set(CLIENT).send({ messageId: 'acked' }).expect(204);
    await request(server).post('/v1/shop/queues/orders/acks').set(CLIENT).send({ messageId: 'never' }).expect(204);
    expect((await attempt('orders', { messageId: 'acked' }).expect(200)).body.attempt).toBe(1);
  });

  it('pages dead letters with limit and cursor', async () => {
    for (let i = 0; i < 5; i++) {
      for (let n = 0; n < 3; n++) await attempt('paged', { messageId: `m-${i}`, payload: { i } });
    }
    // 'paged' has no policy: the namespace default is 4 attempts.
    await Promise.all([0, 1, 2, 3, 4].map((i) => attempt('paged', { messageId: `m-${i}`, payload: { i } })));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string> = { limit: '2', ...(cursor ? { cursor } : {}) };
      const page = await request(server).get(deadLetters('paged')).query(query).set(ADMIN).expect(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((item: { id: string }) => item.id));
      cursor = page.body.next;
    } while (cursor);
    expect(seen.sort()).toEqual(['m-0', 'm-1', 'm-2', 'm-3', 'm-4']);
  });

  it('keeps the admin endpoints to admin tokens', async () => {
    const refused = await request(server).get(deadLetters('orders')).set(CLIENT).expect(403);
    expect(refused.body.code).toBe('forbidden');
    await request(server)
      .post(`${deadLetters('orders')}/x/redrive`)
      .set(CLIENT)
      .expect(403);
    await request(server)
      .delete(`${deadLetters('orders')}/x`)
      .set(CLIENT)
      .expect(403);
    await request(server).get(deadLetters('orders')).expect(401);
  });

  it('refuses a payload over 64 KiB with 413 naming payload, and counts nothing', async () => {
    const refused = await attempt('orders', { messageId: 'big', payload: { blob: 'x'.repeat(64 * 1024) } }).expect(413);
    expect(refused.body).toMatchObject({ code: 'payload_too_large', details: [{ field: 'payload' }] });
    expect((await attempt('orders', { messageId: 'big' }).expect(200)).body.attempt).toBe(1);
  });

  it('lists the queues that hold dead letters, by name with their counts, a page at a time', async () => {
    // A namespace of its own; without a policy a queue parks a message at attempt 5.
    const park = (queue: string, messageId: string) =>
      request(server)
        .post(`/v1/ops/queues/${queue}/attempts`)
        .set(ADMIN)
        .send({ messageId, error: 'boom', attempt: 5 })
        .expect(200);
    const queues = (query: Record<string, string> = {}) =>
      request(server).get('/admin/v1/ops/queues').query(query).set(ADMIN).expect(200);
    expect((await queues()).body).toEqual({ items: [], next: null });
    await park('refunds', 'r-1');
    await park('emails', 'e-1');
    await park('emails', 'e-2');
    await park('invoices', 'i-1');
    // Failing without parking lists nothing.
    await request(server).post('/v1/ops/queues/quiet/attempts').set(ADMIN).send({ messageId: 'q-1' }).expect(200);

    const first = await queues({ limit: '2' });
    expect(first.body).toEqual({
      items: [
        { queue: 'emails', deadLetters: 2, lastDeadLetteredAt: expect.any(Number) },
        { queue: 'invoices', deadLetters: 1, lastDeadLetteredAt: expect.any(Number) },
      ],
      next: 'invoices',
    });
    const rest = await queues({ limit: '2', cursor: first.body.next });
    expect(rest.body).toEqual({
      items: [{ queue: 'refunds', deadLetters: 1, lastDeadLetteredAt: expect.any(Number) }],
      next: null,
    });
    // A queue emptied by a redrive drops out of the list.
    await request(server).post('/admin/v1/ops/queues/refunds/dead-letters/r-1/redrive').set(ADMIN).expect(200);
    expect((await queues()).body.items.map((item: { queue: string }) => item.queue)).toEqual(['emails', 'invoices']);

    await request(server).get('/admin/v1/shop/queues').set(CLIENT).expect(403);
    const refused = await request(server).get('/admin/v1/ops/queues').query({ limit: '0' }).set(ADMIN).expect(400);
    expect(refused.body.details).toEqual([expect.objectContaining({ field: 'limit' })]);
  });
});
