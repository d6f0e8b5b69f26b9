import request from 'supertest';
import { REQUEST_ID_PATTERN } from '@sluice/protocol';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/*
 * Caller-chosen ids through HTTP (docs/api.md, Conventions: "a 503 must never hide a change"): asking
 * again with the same `requestId`, `claimId` or delivery `attempt` answers the first outcome and
 * changes nothing; a new id is one more change; a malformed id is a 400 naming the field, and
 * changes nothing. On the embedded store and on Redis.
 */

const POLICIES = {
  namespaces: {
    shop: {
      dependencies: {
        pay: { concurrency: { limit: 1, leaseMs: 60_000 }, backoff: { baseMs: 100, capMs: 1000, jitter: 'full' } },
      },
      limits: { 'per-user': { rate: 1, periodMs: 3_600_000, burst: 1 } },
      queues: { orders: { maxAttempts: 3, backoff: { baseMs: 1000, capMs: 60_000, jitter: 'full' } } },
    },
  },
};

const BAD_IDS: unknown[] = ['', 'has space', 'x'.repeat(129), 'brace{tag}', 42, null];

let sequence = 0;
const fresh = (label: string) => `${label}-${Date.now().toString(36)}.${++sequence}`;

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('caller-chosen ids end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const post = (path: string, body: object) => request(server).post(path).send(body);

  beforeAll(async () => {
    // No shedding on event-loop delay: a busy test machine is not what these tests are about.
    coordinator = await testCoordinator({ redis: useRedis, policies: POLICIES, config: { maxEventLoopDelayMs: 0 } });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  /** A 400 validation_failed whose details name `field`. */
  function expectNamed(response: request.Response, field: string): void {
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation_failed' });
    expect((response.body.details as Array<{ field: string }>).map((detail) => detail.field)).toContain(field);
  }

  describe('POST /v1/{ns}/deps/{dep}/retry', () => {
    const path = (dep: string) => `/v1/shop/deps/${dep}/retry`;
    const retriesOf = async (dep: string) =>
      (await request(server).get(`/v1/shop/deps/${dep}`).expect(200)).body.budget.retries as number;

    it('answers a repeat with the first grant, its delay and budget, counting the retry once', async () => {
      const dep = fresh('dep');
      const ask = { attempt: 1, idempotent: true, status: 503, requestId: fresh('req') };
      const first = await post(path(dep), ask).expect(200);
      expect(first.body).toMatchObject({ allow: true, reason: 'granted', budget: { retries: 1 } });
      const repeat = await post(path(dep), ask).expect(200);
      expect(repeat.body).toEqual(first.body);
      expect(await retriesOf(dep)).toBe(1);
      const another = await post(path(dep), { ...ask, requestId: fresh('req') }).expect(200);
      expect(another.body).toMatchObject({ allow: true, budget: { retries: 2 } });
      expect(await retriesOf(dep)).toBe(2);
    });

    it('refuses a malformed requestId with a 400 naming it, counting nothing', async () => {
      const dep = fresh('dep');
      for (const requestId of BAD_IDS) {
        expectNamed(await post(path(dep), { attempt: 1, idempotent: true, requestId }), 'requestId');
      }
      expect(await retriesOf(dep)).toBe(0);
    });
  });

  describe('POST /v1/{ns}/deps/{dep}/admit', () => {
    const path = '/v1/shop/deps/pay/admit';

    it('answers a repeat with the same lease; the one slot is the caller own, a new id is refused', async () => {
      const requestId = fresh('call');
      const first = await post(path, { requestId }).expect(200);
      expect(first.body).toMatchObject({ allow: true, reason: 'granted', lease: { id: expect.any(String) } });
      const repeat = await post(path, { requestId }).expect(200);
      expect(repeat.body).toEqual(first.body);
      const another = await post(path, { requestId: fresh('call') }).expect(200);
      expect(another.body).toMatchObject({ allow: false, reason: 'concurrency_limited' });
      await request(server).delete(`/v1/shop/deps/pay/leases/${first.body.lease.id}`).expect(204);
      // Only the first lease held the slot: once released, a new id gets it.
      const next = await post(path, { requestId: fresh('call') }).expect(200);
      expect(next.body).toMatchObject({ allow: true, lease: { id: expect.any(String) } });
      await request(server).delete(`/v1/shop/deps/pay/leases/${next.body.lease.id}`).expect(204);
    });

    it('refuses a malformed requestId with a 400 naming it, taking no lease', async () => {
      for (const requestId of BAD_IDS) expectNamed(await post(path, { requestId }), 'requestId');
      const admitted = await post(path, {}).expect(200);
      expect(admitted.body).toMatchObject({ allow: true, lease: { id: expect.any(String) } });
      await request(server).delete(`/v1/shop/deps/pay/leases/${admitted.body.lease.id}`).expect(204);
    });
  });

  describe('POST /v1/{ns}/limits/{limit}/take', () => {
    const path = '/v1/shop/limits/per-user/take';

    it('answers a repeat with the first take without taking again; a new id is rate limited', async () => {
      const key = fresh('user');
      const requestId = fresh('take');
      const first = await post(path, { key, requestId }).expect(200);
      expect(first.body).toMatchObject({ allow: true, limit: 1, remaining: 0 });
      const repeat = await post(path, { key, requestId }).expect(200);
      expect(repeat.body).toEqual(first.body);
      expect(repeat.headers['ratelimit-remaining']).toBe('0');
      const another = await post(path, { key, requestId: fresh('take') }).expect(200);
      expect(another.body).toMatchObject({ allow: false });
      expect(another.headers['retry-after']).toEqual(expect.stringMatching(/^\d+$/));
    });

    it('refuses a malformed requestId with a 400 naming it, taking nothing', async () => {
      const key = fresh('user');
      for (const requestId of BAD_IDS) expectNamed(await post(path, { key, requestId }), 'requestId');
      expect((await post(path, { key }).expect(200)).body).toMatchObject({ allow: true });
    });
  });

  describe('POST /v1/{ns}/idempotency/{key}/claim', () => {
    const path = (key: string) => `/v1/shop/idempotency/${key}/claim`;

    it('answers a claim repeated with its own claimId while in flight with 201, the same token and resumed', async () => {
      const key = fresh('order');
      const claim = { fingerprint: 'sha256:a', claimId: fresh('claim') };
      const first = await post(path(key), claim).expect(201);
      expect(first.body).toEqual({
        state: 'claimed',
        token: expect.any(String),
        recovered: false,
        leaseExpiresAt: expect.any(Number),
        durable: false,
      });
      const repeat = await post(path(key), claim).expect(201);
      expect(repeat.body).toEqual({ ...first.body, resumed: true });
      await post(path(key), { ...claim, claimId: fresh('claim') }).expect(409);
      await post(path(key), { fingerprint: 'sha256:a' }).expect(409);
      await post(path(key), { ...claim, fingerprint: 'sha256:b' }).expect(422);
      await request(server)
        .put(`/v1/shop/idempotency/${key}`)
        .send({ token: repeat.body.token, response: { status: 200, headers: {}, body: 'done' } })
        .expect(204);
      expect((await post(path(key), claim).expect(200)).body).toMatchObject({ state: 'completed' });
    });

    it('refuses a malformed claimId with a 400 naming it, claiming nothing', async () => {
      const key = fresh('order');
      for (const claimId of BAD_IDS)
        expectNamed(await post(path(key), { fingerprint: 'sha256:a', claimId }), 'claimId');
      await request(server).get(`/v1/shop/idempotency/${key}`).expect(404);
    });
  });

  describe('POST /v1/{ns}/queues/{queue}/attempts', () => {
    const path = '/v1/shop/queues/orders/attempts';

    it('answers a numbered attempt recorded again the same, delay included, and counts the next one', async () => {
      const messageId = fresh('msg');
      const first = await post(path, { messageId, error: 'boom', attempt: 1 }).expect(200);
      expect(first.body).toEqual({ attempt: 1, maxAttempts: 3, deadLetter: false, delayMs: expect.any(Number) });
      expect((await post(path, { messageId, error: 'boom', attempt: 1 }).expect(200)).body).toEqual(first.body);
      const second = await post(path, { messageId, error: 'boom', attempt: 2 }).expect(200);
      expect(second.body).toMatchObject({ attempt: 2, deadLetter: false });
      const parked = await post(path, { messageId, error: 'boom', attempt: 3, payload: { id: 1 } }).expect(200);
      expect(parked.body).toEqual({ attempt: 3, maxAttempts: 3, deadLetter: true, delayMs: 0 });
      expect((await post(path, { messageId, error: 'boom', attempt: 3 }).expect(200)).body).toEqual(parked.body);
      const letters = await request(server).get('/admin/v1/shop/queues/orders/dead-letters').expect(200);
      expect(letters.body.items.filter((item: { messageId: string }) => item.messageId === messageId)).toEqual([
        expect.objectContaining({ attempts: 3, payload: { id: 1 } }),
      ]);
    });

    it('refuses an attempt that is not an integer from 1 to 1e6 with a 400 naming it, counting nothing', async () => {
      const messageId = fresh('msg');
      for (const attempt of [0, -1, 1.5, '2', 1_000_001, null]) {
        expectNamed(await post(path, { messageId, attempt }), 'attempt');
      }
      expect((await post(path, { messageId, attempt: 1_000_000 }).expect(200)).body).toMatchObject({
        attempt: 1_000_000,
        deadLetter: true,
      });
      expect((await post(path, { messageId: fresh('msg') }).expect(200)).body).toMatchObject({ attempt: 1 });
    });
  });

  it('documents each id in /docs-json with its rule and what a repeat answers', async () => {
    const document = (await request(server).get('/docs-json').expect(200)).body;
    const bodyOf = (path: string): { properties: Record<string, Record<string, unknown>> } => {
      let schema = document.paths[path].post.requestBody.content['application/json'].schema;
      while (schema.$ref || schema.allOf) {
        schema = schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema.allOf[0];
      }
      return schema;
    };
    const idRule = { type: 'string', pattern: REQUEST_ID_PATTERN.source, description: expect.stringMatching(/again/) };
    expect(bodyOf('/v1/{ns}/deps/{dep}/retry').properties.requestId).toMatchObject(idRule);
    expect(bodyOf('/v1/{ns}/deps/{dep}/admit').properties.requestId).toMatchObject(idRule);
    expect(bodyOf('/v1/{ns}/limits/{limit}/take').properties.requestId).toMatchObject(idRule);
    expect(bodyOf('/v1/{ns}/idempotency/{key}/claim').properties.claimId).toMatchObject(idRule);
    expect(bodyOf('/v1/{ns}/queues/{queue}/attempts').properties.attempt).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      description: expect.stringMatching(/answers the same/),
    });
  });
});
