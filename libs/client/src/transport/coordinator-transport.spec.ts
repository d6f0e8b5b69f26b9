import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { REQUEST_ID_PATTERN } from '@sluice/protocol';
import { isCoordinatorUnavailableError, type CoordinatorUnavailableError } from '../errors';
import { CoordinatorTransport } from './coordinator-transport';
import { Agents } from './http';
import { grantedDecision } from '../../../../test/support/decisions';

/** What a fake coordinator instance does with one request: answer it, drop the connection, or hold it unanswered. */
type Reply = { status: number; body?: unknown; retryAfter?: string } | 'drop' | 'hold';

interface FakeInstance {
  url: string;
  /** "METHOD /path" and JSON body of every request, in order. */
  seen: Array<{ line: string; body: Record<string, unknown> }>;
  /** Replies to the next requests in turn; then `otherwise`. */
  plan(replies: Reply[], otherwise?: Reply): void;
  close(): Promise<void>;
}

const DECISION = grantedDecision();
const granted: Reply = { status: 200, body: DECISION };
const overloaded: Reply = {
  status: 503,
  body: { statusCode: 503, code: 'overloaded', message: 'shed' },
  retryAfter: '1',
};
const storeUnavailable: Reply = {
  status: 503,
  body: { statusCode: 503, code: 'store_unavailable', message: 'store' },
  retryAfter: '1',
};

async function fakeInstance(): Promise<FakeInstance> {
  const seen: FakeInstance['seen'] = [];
  let queue: Reply[] = [];
  let otherwise: Reply = granted;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      seen.push({ line: `${req.method} ${req.url}`, body: text ? JSON.parse(text) : {} });
      const reply = queue.shift() ?? otherwise;
      if (reply === 'drop') {
        req.socket.destroy();
        return;
      }
      if (reply === 'hold') return;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (reply.retryAfter) headers['retry-after'] = reply.retryAfter;
      res.writeHead(reply.status, headers);
      res.end(reply.body === undefined ? '' : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    plan(replies, next = granted) {
      queue = [...replies];
      otherwise = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The error a promise rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<CoordinatorUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isCoordinatorUnavailableError(error)) throw new Error(`expected a CoordinatorUnavailableError, got ${error}`);
  return error;
}

const RETRY = { attempt: 1, idempotent: true, status: 503 };
/** Room enough for every exchange: these cases are about which exchanges go out, not about time. */
const ROOMY = { timeoutMs: 5000 };

describe('CoordinatorTransport: ids, re-asks and overload', () => {
  const agents = new Agents();
  let a: FakeInstance;
  let b: FakeInstance;
  const transport = (...instances: FakeInstance[]) =>
    new CoordinatorTransport({
      baseUrls: instances.map((instance) => instance.url),
      namespace: 'shop',
      agents,
      connectTimeoutMs: 1000,
    });

  beforeEach(async () => {
    [a, b] = await Promise.all([fakeInstance(), fakeInstance()]);
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
  });
  afterAll(() => agents.destroy());

  it('sends a fresh requestId with every retry and admit decision', async () => {
    const coordinator = transport(a);
    await coordinator.retry('pay', RETRY, ROOMY);
    await coordinator.retry('pay', RETRY, ROOMY);
    a.plan([], {
      status: 200,
      body: { allow: true, reason: 'granted', retryAfterMs: 0, breaker: { state: 'closed' } },
    });
    await coordinator.admit('pay', ROOMY);
    await coordinator.admit('pay', ROOMY, 3);
    const ids = a.seen.map((request) => request.body.requestId as string);
    expect(ids).toHaveLength(4);
    for (const id of ids) expect(id).toMatch(REQUEST_ID_PATTERN);
    expect(new Set(ids).size).toBe(4);
    expect(a.seen[3].body).toEqual({ cost: 3, requestId: ids[3] });
  });

  it('asks again with the same requestId after a 503 store_unavailable or a dropped connection', async () => {
    const coordinator = transport(a);
    a.plan([storeUnavailable, 'drop']);
    await expect(coordinator.retry('pay', RETRY, ROOMY)).resolves.toEqual(DECISION);
    expect(a.seen).toHaveLength(3);
    expect(new Set(a.seen.map((request) => request.body.requestId)).size).toBe(1);
    expect(a.seen[2].body).toEqual({ ...RETRY, requestId: a.seen[0].body.requestId });
  });

  it('asks at most twice more, and not at all once the caller no longer waits', async () => {
    const coordinator = transport(a);
    a.plan([], storeUnavailable);
    const error = await rejection(coordinator.retry('pay', RETRY, ROOMY));
    expect([error.status, error.code, error.retryAfterMs]).toEqual([503, 'store_unavailable', 1000]);
    expect(a.seen).toHaveLength(3);
    await rejection(coordinator.retry('pay', RETRY, { timeoutMs: 5000, reAskWithinMs: 0 }));
    expect(a.seen).toHaveLength(4);
  });

  it('does not ask again an exchange that closing the client cut off', async () => {
    const own = new Agents();
    const coordinator = new CoordinatorTransport({
      baseUrls: [a.url, b.url],
      namespace: 'shop',
      agents: own,
      connectTimeoutMs: 1000,
    });
    a.plan(['hold']);
    const asked = rejection(coordinator.retry('pay', RETRY, ROOMY));
    while (a.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    own.destroy();
    await asked;
    expect([a.seen.length, b.seen.length]).toEqual([1, 0]);
  });

  it('takes an overloaded answer to the next instance with the same id, and the next call starts there', async () => {
    const coordinator = transport(a, b);
    a.plan([], overloaded);
    await expect(coordinator.retry('pay', RETRY, ROOMY)).resolves.toEqual(DECISION);
    expect(a.seen).toHaveLength(1);
    expect(b.seen.map((request) => request.body.requestId)).toEqual([a.seen[0].body.requestId]);
    await coordinator.retry('pay', RETRY, ROOMY);
    expect([a.seen.length, b.seen.length]).toEqual([1, 2]);
  });

  it('never sends a request back to the instance that shed it: with every instance overloaded, the call is overloaded', async () => {
    a.plan([], overloaded);
    b.plan([], overloaded);
    const alone = await rejection(transport(a).retry('pay', RETRY, ROOMY));
    expect(alone.overloaded).toBe(true);
    const both = await rejection(transport(a, b).retry('pay', RETRY, ROOMY));
    expect(both.overloaded).toBe(true);
    // Each instance was asked once per call: a alone once, then a and b once each.
    expect([a.seen.length, b.seen.length]).toEqual([2, 1]);
  });

  it('ends a call that met store_unavailable and overloaded with the store_unavailable (the one that counts)', async () => {
    a.plan([], storeUnavailable);
    b.plan([], overloaded);
    const error = await rejection(transport(a, b).retry('pay', RETRY, ROOMY));
    expect([error.code, error.overloaded]).toEqual(['store_unavailable', false]);
  });

  it('asks a report again only after an overloaded answer, on another instance: it carries no id', async () => {
    const report = { reporter: 'r', deps: [] };
    a.plan([], storeUnavailable);
    await rejection(transport(a, b).report(report, 5000));
    expect([a.seen.length, b.seen.length]).toEqual([1, 0]);
    a.plan([], overloaded);
    b.plan([], { status: 200, body: { deps: {} } });
    await expect(transport(a, b).report(report, 5000)).resolves.toEqual({ deps: {} });
    expect([a.seen.length, b.seen.length]).toEqual([2, 1]);
  });

  it('does not ask again after an answer that is not a 502, 503 or 504', async () => {
    a.plan([], { status: 400, body: { statusCode: 400, code: 'validation_failed', message: 'no' } });
    const error = await rejection(transport(a, b).retry('pay', RETRY, ROOMY));
    expect([error.status, error.code]).toEqual([400, 'validation_failed']);
    expect([a.seen.length, b.seen.length]).toEqual([1, 0]);
  });

  it('takes any call to the next instance when the connection to one is refused: nothing was sent', async () => {
    const gone = await fakeInstance();
    await gone.close();
    b.plan([], { status: 200, body: { deps: {} } });
    const coordinator = new CoordinatorTransport({
      baseUrls: [gone.url, b.url],
      namespace: 'shop',
      agents,
      connectTimeoutMs: 1000,
    });
    await expect(coordinator.report({ reporter: 'r', deps: [] }, 5000)).resolves.toEqual({ deps: {} });
    expect(b.seen.map((request) => request.line)).toEqual(['POST /v1/shop/reports']);
  });
});
