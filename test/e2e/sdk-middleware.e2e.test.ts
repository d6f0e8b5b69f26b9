import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import express from 'express';
import Fastify from 'fastify';
import {
  CoordinatorClient,
  expressIdempotency,
  fastifyIdempotency,
  idempotencyOf,
  isCoordinatorUnavailableError,
  markNoSideEffect,
  releaseIdempotencyClaim,
  requestFingerprint,
  type IdempotencyOptions,
} from '@sluice/client';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * The Express middleware and the Fastify hooks, each on a real app in front of a real
 * coordinator: the same routes and the same expectations for both.
 */
interface ExampleServer {
  url: string;
  runs: Map<string, number>;
  close(): Promise<void>;
}

type Routes = {
  /** What `/slow` waits on before it answers. */
  gate: { current: Promise<void> };
};

const BINARY = randomBytes(3000);

/** How often each route ran; `count` adds a run and returns its number. */
function runCounter(): { runs: Map<string, number>; count: (route: string) => number } {
  const runs = new Map<string, number>();
  return {
    runs,
    count: (route) => {
      runs.set(route, (runs.get(route) ?? 0) + 1);
      return runs.get(route)!;
    },
  };
}

/** What each route does on its n-th run: [status, headers, body]. */
function routeAnswer(route: string, run: number): [number, Record<string, string | string[]>, string | Buffer] {
  switch (route) {
    case 'orders':
      return [201, { 'x-order': `ord_${run}`, 'set-cookie': ['a=1', 'b=2'] }, JSON.stringify({ run, at: Date.now() })];
    case 'files':
      return [200, { 'content-type': 'application/octet-stream', 'x-nonce': randomBytes(4).toString('hex') }, BINARY];
    case 'flaky':
      return run === 1 ? [429, { 'retry-after': '1' }, 'slow down'] : [201, {}, JSON.stringify({ run })];
    case 'guarded':
    case 'declined':
      return [201, {}, JSON.stringify({ run })];
    case 'large':
      return [200, { 'content-type': 'text/plain' }, 'x'.repeat(5000)];
    default:
      return [200, {}, JSON.stringify({ run })];
  }
}

async function startExpress(
  client: CoordinatorClient,
  options: IdempotencyOptions,
  routes: Routes,
): Promise<ExampleServer> {
  const { runs, count } = runCounter();
  const idempotent = expressIdempotency(client, options);
  const app = express();
  app.use(express.json());
  app.post('/required', expressIdempotency(client, { ...options, required: true }), (_req, res) => {
    res.status(201).json({ run: count('required') });
  });
  app.post('/:route', idempotent, async (req, res, next) => {
    const route = String(req.params.route);
    const run = count(route);
    if (route === 'slow') await routes.gate.current;
    if (route === 'guarded' && run === 1) return next(markNoSideEffect(new Error('upstream refused')));
    if (route === 'declined' && run === 1) {
      releaseIdempotencyClaim(req);
      return res.status(409).json({ error: 'out of stock' });
    }
    if (route === 'recovered') return res.json({ recovered: idempotencyOf(req)?.recovered });
    const [status, headers, body] = routeAnswer(route, run);
    res.status(status);
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.send(body);
  });
  app.use(idempotent.errors);
  app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(502).json({ error: error.message });
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function startFastify(
  client: CoordinatorClient,
  options: IdempotencyOptions,
  routes: Routes,
): Promise<ExampleServer> {
  const { runs, count } = runCounter();
  const app = Fastify();
  const idempotent = fastifyIdempotency(client, options);
  app.post('/required', { ...fastifyIdempotency(client, { ...options, required: true }) }, async (_request, reply) =>
    reply.code(201).send({ run: count('required') }),
  );
  app.post<{ Params: { route: string } }>('/:route', { ...idempotent }, async (request, reply) => {
    const { route } = request.params;
    const run = count(route);
    if (route === 'slow') await routes.gate.current;
    if (route === 'guarded' && run === 1)
      throw Object.assign(markNoSideEffect(new Error('upstream refused')), { statusCode: 502 });
    if (route === 'declined' && run === 1) {
      releaseIdempotencyClaim(request);
      return reply.code(409).send({ error: 'out of stock' });
    }
    if (route === 'recovered') return reply.send({ recovered: idempotencyOf(request)?.recovered });
    const [status, headers, body] = routeAnswer(route, run);
    reply.code(status);
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return reply.send(body);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, runs, close: () => app.close() };
}

describe.each([
  ['Express middleware', startExpress],
  ['Fastify hooks', startFastify],
])('%s', (_label, startServer) => {
  let coordinator: TestCoordinator;
  let server: ExampleServer;
  let client: CoordinatorClient;
  const routes: Routes = { gate: { current: Promise.resolve() } };
  const errors: unknown[] = [];
  const key = () => `k-${randomBytes(6).toString('hex')}`;
  const post = async (path: string, idempotencyKey?: string, body: unknown = { item: 'A' }, url = server.url) => {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
  };

  beforeAll(async () => {
    coordinator = await testCoordinator({ listen: true });
    client = new CoordinatorClient({ baseUrl: coordinator.url, namespace: 'shop' });
    server = await startServer(client, { maxResponseBytes: 4096, onError: (e) => errors.push(e) }, routes);
  });
  afterAll(async () => {
    await server?.close();
    await coordinator?.close();
  });

  it('stores the first response and replays it byte for byte, with Idempotent-Replayed', async () => {
    const k = key();
    const first = await post('/orders', k);
    expect(first.status).toBe(201);
    const replay = await post('/orders', k);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.headers.get('x-order')).toBe('ord_1');
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(server.runs.get('orders')).toBe(1);
  });

  it('replays a binary body and its headers exactly', async () => {
    const k = key();
    const first = await post('/files', k);
    const replay = await post('/files', k);
    expect(first.bytes.equals(BINARY)).toBe(true);
    expect(replay.bytes.equals(BINARY)).toBe(true);
    expect(replay.headers.get('x-nonce')).toBe(first.headers.get('x-nonce'));
    expect(replay.headers.get('content-type')).toBe('application/octet-stream');
  });

  it('answers 409 with Retry-After while the first request runs, then replays it; the handler runs once', async () => {
    const k = key();
    let open: () => void = () => {};
    routes.gate.current = new Promise((resolve) => (open = resolve));
    const first = post('/slow', k);
    await waitUntil(
      () => (server.runs.get('slow') ?? 0) >= 1,
      5000,
      () => 'the first request never ran',
    );
    const concurrent = await Promise.all(Array.from({ length: 20 }, () => post('/slow', k)));
    for (const answer of concurrent) {
      expect(answer.status).toBe(409);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(JSON.parse(answer.bytes.toString())).toMatchObject({
        code: 'in_flight',
        retryAfterMs: expect.any(Number),
      });
    }
    open();
    expect((await first).status).toBe(200);
    expect((await post('/slow', k)).headers.get('idempotent-replayed')).toBe('true');
    expect(server.runs.get('slow')).toBe(1);
    routes.gate.current = Promise.resolve();
  });

  it('answers 422 to the same key with another body, and 400 when a required key is missing or malformed', async () => {
    const k = key();
    await post('/orders', k, { item: 'A' });
    const mismatch = await post('/orders', k, { item: 'B' });
    expect(mismatch.status).toBe(422);
    expect(JSON.parse(mismatch.bytes.toString())).toMatchObject({ code: 'fingerprint_mismatch' });
    const missing = await post('/required');
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.bytes.toString())).toMatchObject({ details: [{ field: 'Idempotency-Key' }] });
    expect((await post('/required', 'not valid!')).status).toBe(400);
    expect(server.runs.get('required')).toBeUndefined();
    expect((await post('/required', key())).status).toBe(201);
  });

  it('releases the claim on a transient 429, an error marked before side effects, and a handler that says so', async () => {
    for (const [route, firstStatus] of [
      ['flaky', 429],
      ['guarded', 502],
      ['declined', 409],
    ] as const) {
      const k = key();
      expect((await post(`/${route}`, k)).status).toBe(firstStatus);
      const second = await post(`/${route}`, k);
      expect(second.status).toBe(201);
      expect(JSON.parse(second.bytes.toString())).toEqual({ run: 2 });
      expect((await post(`/${route}`, k)).headers.get('idempotent-replayed')).toBe('true');
      expect(server.runs.get(route)).toBe(2);
    }
  });

  it('sends a response too large to store, releases its claim and says so', async () => {
    const k = key();
    const before = errors.length;
    const first = await post('/large', k);
    expect(first.status).toBe(200);
    expect(first.bytes.toString()).toBe('x'.repeat(5000));
    await waitUntil(
      async () => (await post('/large', k)).headers.get('idempotent-replayed') === null,
      5000,
      () => 'the claim was not released',
    );
    // Said for the first call, and for each ask after it (claimed anew, too large again), with the reason.
    const said = errors.slice(before);
    expect(said[0]).toEqual(new Error('the response passed 4096 bytes: sent, not stored'));
    expect(said).toEqual(said.map(() => said[0]));
  });

  it('answers 503 when the coordinator cannot be reached, or runs unprotected when told to proceed', async () => {
    const down = new CoordinatorClient({ baseUrl: `http://127.0.0.1:${await findFreePort()}`, namespace: 'shop' });
    const unavailable: unknown[] = [];
    const rejecting = await startServer(down, { onError: (e) => unavailable.push(e) }, routes);
    const proceeding = await startServer(down, { whenUnavailable: 'proceed' }, routes);
    try {
      const refused = await post('/orders', key(), undefined, rejecting.url);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(rejecting.runs.get('orders')).toBeUndefined();
      expect(unavailable.some(isCoordinatorUnavailableError)).toBe(true);
      expect((await post('/orders', key(), undefined, proceeding.url)).status).toBe(201);
      expect(proceeding.runs.get('orders')).toBe(1);
    } finally {
      await rejecting.close();
      await proceeding.close();
    }
  });

  /** A key whose holder claimed this very request (`/recovered`) and died, once its lease has run out. */
  const abandoned = async () => {
    const k = key();
    const fingerprint = requestFingerprint({ method: 'POST', url: '/recovered', body: { item: 'A' } });
    // Long enough that the request below meets the lease in flight on a loaded machine.
    expect((await client.claimIdempotencyKey(k, { fingerprint, leaseMs: 1500 })).state).toBe('claimed');
    expect((await post('/recovered', k)).status).toBe(409);
    const held = (await client.readIdempotencyKey(k))!;
    expect(held.leaseExpiresAt! - held.createdAt).toBe(1500);
    await coordinator.waitPast(held.leaseExpiresAt!); // the dead holder's lease runs out
    return k;
  };

  it('does not run the handler again for a key whose holder vanished, by default', async () => {
    const k = await abandoned();
    const refused = await post('/recovered', k);
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.bytes.toString())).toMatchObject({
      code: 'in_flight',
      message: expect.stringMatching(/part-way/),
    });
    expect((await client.readIdempotencyKey(k))?.state).toBe('in_flight');
  });

  it("with onRecovered: 'run', runs it and tells the handler that it recovered the key", async () => {
    const running = await startServer(client, { onRecovered: 'run' }, routes);
    try {
      const k = await abandoned();
      const answer = await post('/recovered', k, undefined, running.url);
      expect(JSON.parse(answer.bytes.toString())).toEqual({ recovered: true });
    } finally {
      await running.close();
    }
  });

  it('runs a request without a key unprotected on an optional route', async () => {
    const before = server.runs.get('orders') ?? 0;
    expect((await post('/orders')).status).toBe(201);
    expect((await post('/orders')).status).toBe(201);
    expect(server.runs.get('orders')).toBe(before + 2);
  });
});
