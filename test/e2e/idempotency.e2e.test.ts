import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { SHARED_REDIS_URL } from '../support/redis';
import { startCoordinators, type Coordinators } from '../support/sdk-suites';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const BINARY = randomBytes(4096);
const STORED = {
  status: 201,
  headers: { 'content-type': 'application/octet-stream', 'x-order-id': 'ord_1', 'set-cookie': ['a=1', 'b=2'] },
  body: BINARY.toString('base64'),
  bodyEncoding: 'base64',
};

let keySequence = 0;
const newKey = () => `order:${Date.now()}.${++keySequence}-${randomBytes(3).toString('hex')}`;

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('idempotency keys end to end (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const path = (key: string, ns = 'shop') => `/v1/${ns}/idempotency/${key}`;
  /** When the holder's lease of `key` runs out (on the store's clock); it must be `leaseMs` after the claim. */
  const leaseEnd = async (key: string, leaseMs: number, ns = 'shop'): Promise<number> => {
    const view = (await request(server).get(path(key, ns)).expect(200)).body;
    expect(view.leaseExpiresAt - view.createdAt).toBe(leaseMs);
    return view.leaseExpiresAt as number;
  };
  const claim = (key: string, body: object = { fingerprint: 'sha256:a' }, ns = 'shop') =>
    request(server)
      .post(`${path(key, ns)}/claim`)
      .send(body);
  const complete = (key: string, token: string, response: object = STORED) =>
    request(server).put(path(key)).send({ token, response });

  beforeAll(async () => {
    const policies = { namespaces: { capped: { idempotency: { maxRetentionSeconds: 3600 } } } };
    coordinator = await testCoordinator({ redis: useRedis, policies });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it('claims a new key (201), then answers 409 in_flight with Retry-After while it is held', async () => {
    const key = newKey();
    const first = await claim(key).expect(201);
    expect(first.body).toEqual({
      state: 'claimed',
      token: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      recovered: false,
      leaseExpiresAt: expect.any(Number),
      durable: false,
    });
    const second = await claim(key).expect(409);
    expect(second.headers['retry-after']).toBe('1');
    expect(second.body).toEqual({
      statusCode: 409,
      code: 'in_flight',
      message: expect.any(String),
      state: 'in_flight',
      retryAfterMs: expect.any(Number),
    });
    expect(second.body.retryAfterMs).toBeGreaterThan(0);
    expect(second.body.retryAfterMs).toBeLessThanOrEqual(1000);
    const view = await request(server).get(path(key)).expect(200);
    expect(view.body).toEqual({
      state: 'in_flight',
      createdAt: expect.any(Number),
      expiresAt: expect.any(Number),
      leaseExpiresAt: first.body.leaseExpiresAt,
    });
  });

  it('stores a binary response with its headers and replays it exactly (200 completed)', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    await complete(key, token).expect(204);
    const replay = await claim(key).expect(200);
    expect(replay.body).toEqual({ state: 'completed', response: STORED });
    expect(Buffer.from(replay.body.response.body, 'base64').equals(BINARY)).toBe(true);
    const view = await request(server).get(path(key)).expect(200);
    expect(view.body).toMatchObject({ state: 'completed', completedAt: expect.any(Number) });
    // 24 h retention by default, counted from the completion.
    expect(view.body.expiresAt - view.body.completedAt).toBe(86_400_000);
  });

  it('replays a utf8 body byte for byte, and defaults bodyEncoding to utf8', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    const body = '{"note":"café ☕","escaped":"\\u0000\\r\\n","emoji":"😀"}';
    await complete(key, token, { status: 200, headers: {}, body }).expect(204);
    const replay = await claim(key).expect(200);
    expect(replay.body.response).toEqual({ status: 200, headers: {}, body, bodyEncoding: 'utf8' });
  });

  it('answers 422 fingerprint_mismatch to the same key with another request, in flight and completed', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    const inFlight = await claim(key, { fingerprint: 'sha256:b' }).expect(422);
    expect(inFlight.body).toMatchObject({ code: 'fingerprint_mismatch', details: [{ field: 'fingerprint' }] });
    await complete(key, token).expect(204);
    await claim(key, { fingerprint: 'sha256:b' }).expect(422);
    await claim(key).expect(200);
  });

  it('lets only the current token complete or release (409 lease_lost otherwise)', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    const forged = await complete(key, 'forged-token').expect(409);
    expect(forged.body).toMatchObject({ code: 'lease_lost', details: [{ field: 'token' }] });
    await request(server).delete(path(key)).query({ token: 'forged-token' }).expect(409);
    await request(server).delete(path(key)).query({ token }).expect(204);
    await request(server).get(path(key)).expect(404);
    // Released: the key is new again, and a second release of the old claim is harmless.
    await request(server).delete(path(key)).query({ token }).expect(204);
    const again = await claim(key).expect(201);
    expect(again.body.recovered).toBe(false);
    await complete(key, token).expect(409);
    await complete(newKey(), token).expect(409);
  });

  it('recovers a key whose holder died: after the lease the next claim is recovered, the old token is fenced', async () => {
    const key = newKey();
    const crashed = (await claim(key, { fingerprint: 'sha256:a', leaseMs: 200 }).expect(201)).body;
    await coordinator.waitPast(await leaseEnd(key, 200));
    const successor = await claim(key).expect(201);
    expect(successor.body).toMatchObject({ state: 'claimed', recovered: true });
    expect(successor.body.token).not.toBe(crashed.token);
    const late = await complete(key, crashed.token).expect(409);
    expect(late.body.code).toBe('lease_lost');
    await complete(key, successor.body.token).expect(204);
    expect((await claim(key).expect(200)).body.response).toEqual(STORED);
  });

  it('forgets a completed key after its retention: the key is new again', async () => {
    const key = newKey();
    const { token } = (await claim(key, { fingerprint: 'sha256:a', retentionSeconds: 1 }).expect(201)).body;
    await complete(key, token).expect(204);
    const kept = (await request(server).get(path(key)).expect(200)).body;
    expect(kept.expiresAt - kept.completedAt).toBe(1000); // retentionSeconds: 1, on the store's clock
    await coordinator.waitPast(kept.expiresAt);
    await request(server).get(path(key)).expect(404);
    const fresh = await claim(key, { fingerprint: 'sha256:other' }).expect(201);
    expect(fresh.body.recovered).toBe(false);
  });

  it('refuses a stored response over 256 KiB with 413, and leaves the key in flight', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    const large = { ...STORED, body: randomBytes(256 * 1024).toString('base64') };
    const refused = await complete(key, token, large).expect(413);
    expect(refused.body).toMatchObject({ code: 'payload_too_large', details: [{ field: 'response' }] });
    expect((await request(server).get(path(key)).expect(200)).body.state).toBe('in_flight');
    const fits = { ...STORED, body: randomBytes(200 * 1024).toString('base64') };
    await complete(key, token, fits).expect(204);
  });

  it('bounds retention by the namespace policy: 400 naming retentionSeconds past its maximum', async () => {
    const refused = await claim(newKey(), { fingerprint: 'f', retentionSeconds: 3601 }, 'capped').expect(400);
    expect(refused.body).toMatchObject({ code: 'validation_failed', details: [{ field: 'retentionSeconds' }] });
    await claim(newKey(), { fingerprint: 'f', retentionSeconds: 3600 }, 'capped').expect(201);
    await claim(newKey(), { fingerprint: 'f', retentionSeconds: 604_800 }).expect(201);
  });

  it('scopes keys per namespace', async () => {
    const key = newKey();
    const { token } = (await claim(key).expect(201)).body;
    await complete(key, token).expect(204);
    await claim(key, { fingerprint: 'sha256:other' }, 'billing').expect(201);
  });

  it('counts claims in sluice_idempotency_requests_total by result', async () => {
    const key = newKey();
    // A lease long enough that the next two claims meet it in flight on a loaded machine.
    const { token } = (await claim(key, { fingerprint: 'm', leaseMs: 1500 }, 'counted').expect(201)).body;
    await claim(key, { fingerprint: 'm' }, 'counted').expect(409);
    await claim(key, { fingerprint: 'x' }, 'counted').expect(422);
    await coordinator.waitPast(await leaseEnd(key, 1500, 'counted'));
    const recovered = (await claim(key, { fingerprint: 'm' }, 'counted').expect(201)).body;
    expect(recovered.recovered).toBe(true);
    expect(token).not.toBe(recovered.token);
    await request(server).put(path(key, 'counted')).send({ token: recovered.token, response: STORED }).expect(204);
    await claim(key, { fingerprint: 'm' }, 'counted').expect(200);
    const metrics = (await request(server).get('/metrics').expect(200)).text;
    for (const result of ['claimed', 'recovered', 'replayed', 'in_flight', 'mismatch']) {
      expect(metrics).toContain(`sluice_idempotency_requests_total{namespace="counted",result="${result}"} 1`);
    }
  });
});

describe('idempotency keys across two instances on Redis', () => {
  let coordinators: Coordinators;
  beforeAll(async () => {
    coordinators = await startCoordinators({ redisUrl: SHARED_REDIS_URL });
  });
  afterAll(() => coordinators?.close());

  it('grants exactly one of 100 concurrent claims split across the instances', async () => {
    const key = newKey();
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const res = await fetch(`${coordinators.urls[i % 2]}/v1/shop/idempotency/${key}/claim`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ fingerprint: 'sha256:storm' }),
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(99);
  });
});
