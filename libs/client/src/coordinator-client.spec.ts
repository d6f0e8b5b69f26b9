import { REQUEST_ID_PATTERN } from '@sluice/protocol';
import { CoordinatorClient } from './coordinator-client';
import { deliveries } from './deliveries';
import { isCoordinatorUnavailableError } from './errors';
import { IdempotencyEngine } from './idempotency/engine';

/** One scripted exchange: a response (status and JSON body), or a fetch that fails (no answer). */
type Scripted = { status: number; body?: unknown; retryAfter?: string } | 'no-answer' | 'hang';

const overloaded: Scripted = { status: 503, body: { statusCode: 503, code: 'overloaded' }, retryAfter: '1' };
const storeUnavailable: Scripted = {
  status: 503,
  body: { statusCode: 503, code: 'store_unavailable' },
  retryAfter: '1',
};

/**
 * A client over a scripted fetch: every request is recorded (URL, method, JSON body) and answered
 * by the first script entry whose pattern matches its URL, in turn; a request nothing matches gets 204.
 */
function scripted(baseUrl: string | string[], script: Array<[RegExp, Scripted[]]>, timeoutMs?: number) {
  const sent: Array<{ url: string; method: string; body: Record<string, unknown> }> = [];
  const fetchStub = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    sent.push({ url, method: init?.method ?? 'GET', body: init?.body ? JSON.parse(String(init.body)) : {} });
    const replies = script.find(([pattern]) => pattern.test(url))?.[1];
    const reply = replies && replies.length > 1 ? replies.shift()! : (replies?.[0] ?? { status: 204 });
    if (reply === 'no-answer') throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    if (reply === 'hang') {
      // No answer until the exchange gives up waiting.
      return new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true }),
      );
    }
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (reply.retryAfter) headers['retry-after'] = reply.retryAfter;
    return new Response(reply.body === undefined ? null : JSON.stringify(reply.body), {
      status: reply.status,
      headers,
    });
  };
  const client = new CoordinatorClient({ baseUrl, namespace: 'shop', timeoutMs, fetch: fetchStub as typeof fetch });
  return { client, sent };
}

const CLAIMED = { state: 'claimed', token: 'token-1', recovered: false, leaseExpiresAt: 0 };

describe('CoordinatorClient: caller-chosen ids and re-asks', () => {
  it('claims with a fresh claimId, and after a 503 asks again with the same one: a resumed claim is its own', async () => {
    const { client, sent } = scripted('http://a', [
      [/\/claim$/, [storeUnavailable, 'no-answer', { status: 201, body: { ...CLAIMED, resumed: true } }]],
    ]);
    const claim = await client.claimIdempotencyKey('order-1', { fingerprint: 'f' });
    expect(claim).toMatchObject({ state: 'claimed', token: 'token-1', resumed: true });
    expect(sent).toHaveLength(3);
    const [first] = sent;
    expect(first.body.claimId).toMatch(REQUEST_ID_PATTERN);
    expect(sent.map((request) => request.body)).toEqual([first.body, first.body, first.body]);
    // A claim of its own keeps the caller's id.
    await client.claimIdempotencyKey('order-2', { fingerprint: 'f', claimId: 'mine-1' });
    expect(sent[3].body.claimId).toBe('mine-1');
  });

  it('takes from a named limit with a requestId, asked again after no answer with the same one', async () => {
    const decision = { allow: true, limit: 10, remaining: 9, retryAfterMs: 0, resetMs: 100, shadow: false };
    const { client, sent } = scripted('http://a', [[/\/take$/, ['no-answer', { status: 200, body: decision }]]]);
    await expect(client.takeLimit('exports', { key: 'user-1' })).resolves.toEqual(decision);
    expect(sent.map((request) => request.url)).toEqual([
      'http://a/v1/shop/limits/exports/take',
      'http://a/v1/shop/limits/exports/take',
    ]);
    expect(sent[0].body).toEqual({ key: 'user-1', requestId: expect.stringMatching(REQUEST_ID_PATTERN) });
    expect(sent[1].body).toEqual(sent[0].body);
  });

  it('waits half its time for a claim exchange, then asks again with the same claimId', async () => {
    const { client, sent } = scripted('http://a', [[/\/claim$/, ['hang', { status: 201, body: CLAIMED }]]], 200);
    await expect(client.claimIdempotencyKey('order-1', { fingerprint: 'f' })).resolves.toMatchObject(CLAIMED);
    expect(sent).toHaveLength(2);
    expect(sent[1].body.claimId).toBe(sent[0].body.claimId);
  });

  it('asks a delivery attempt again only when it carries its attempt number', async () => {
    const recorded = { attempt: 2, maxAttempts: 5, deadLetter: false, delayMs: 10 };
    const { client, sent } = scripted('http://a', [
      [/\/attempts$/, [storeUnavailable, { status: 200, body: recorded }]],
    ]);
    await expect(client.recordDeliveryAttempt('orders', { messageId: 'm-1', error: 'e' })).rejects.toMatchObject({
      status: 503,
      code: 'store_unavailable',
    });
    expect(sent).toHaveLength(1);
    await expect(client.recordDeliveryAttempt('orders', { messageId: 'm-1', error: 'e', attempt: 2 })).resolves.toEqual(
      recorded,
    );
    expect(sent.map((request) => request.body.attempt)).toEqual([undefined, 2]);
  });

  it('takes an overloaded answer to the next base URL, for any call: nothing was done', async () => {
    const { client, sent } = scripted(
      ['http://a', 'http://b'],
      [
        [/^http:\/\/a\//, [overloaded]],
        [/^http:\/\/b\//, [{ status: 204 }]],
      ],
    );
    await client.ackDelivery('orders', 'm-1');
    expect(sent.map((request) => request.url)).toEqual([
      'http://a/v1/shop/queues/orders/acks',
      'http://b/v1/shop/queues/orders/acks',
    ]);
    // The next call starts on the instance that answered.
    await client.ackDelivery('orders', 'm-2');
    expect(sent[2].url).toBe('http://b/v1/shop/queues/orders/acks');
  });

  it('never asks the one instance that shed a call again: the caller learns it was overloaded', async () => {
    const { client, sent } = scripted('http://a', [[/\/claim$/, [overloaded]]]);
    const error = await client.claimIdempotencyKey('order-1', { fingerprint: 'f' }).catch((e: unknown) => e);
    expect(isCoordinatorUnavailableError(error) && [error.overloaded, error.retryAfterMs]).toEqual([true, 1000]);
    expect(sent).toHaveLength(1);
  });

  it('asks one call at most three times in all', async () => {
    const { client, sent } = scripted(['http://a', 'http://b'], [[/\/claim$/, [storeUnavailable]]]);
    await expect(client.claimIdempotencyKey('order-1', { fingerprint: 'f' })).rejects.toMatchObject({ status: 503 });
    expect(sent.map((request) => new URL(request.url).host)).toEqual(['a', 'b', 'a']);
  });
});

describe('the idempotency engine and the delivery consumer send their ids', () => {
  it('the engine runs the request on a resumed claim, and settles it with that claim token', async () => {
    const { client, sent } = scripted('http://a', [
      [/\/claim$/, [storeUnavailable, { status: 201, body: { ...CLAIMED, resumed: true } }]],
    ]);
    const engine = new IdempotencyEngine(client);
    const request = { method: 'POST', url: '/orders', headers: { 'idempotency-key': 'order-9' }, body: { n: 1 } };
    const decision = await engine.decide(request);
    expect(decision.action).toBe('run');
    if (decision.action !== 'run') return;
    await decision.claim.settle({ status: 201, headers: {}, body: '{}', bodyEncoding: 'utf8' });
    const [first, second, completion] = sent;
    expect(first.body.claimId).toMatch(REQUEST_ID_PATTERN);
    expect(second.body.claimId).toBe(first.body.claimId);
    expect([completion.method, completion.body.token]).toEqual(['PUT', 'token-1']);
  });

  it('the engine says overloaded when every instance shed the claim', async () => {
    const { client } = scripted(['http://a', 'http://b'], [[/\/claim$/, [overloaded]]]);
    const decision = await new IdempotencyEngine(client).decide({
      method: 'POST',
      url: '/orders',
      headers: { 'idempotency-key': 'order-9' },
    });
    expect(
      decision.action === 'respond' && [decision.response.status, JSON.parse(decision.response.body).code],
    ).toEqual([503, 'overloaded']);
  });

  it('the delivery consumer records a failure as the broker delivery count, asked again with it after no answer', async () => {
    const recorded = { attempt: 3, maxAttempts: 5, deadLetter: false, delayMs: 10 };
    const { client, sent } = scripted('http://a', [
      [/\/claim$/, [{ status: 201, body: CLAIMED }]],
      [/\/attempts$/, ['no-answer', { status: 200, body: recorded }]],
    ]);
    const outcome = await deliveries(client, 'orders').handle({ id: 'm-1', payload: { n: 1 }, deliveryCount: 3 }, () =>
      Promise.reject(new Error('boom')),
    );
    expect(outcome).toMatchObject({ status: 'retry', attempt: 3, delayMs: 10 });
    const attempts = sent.filter((request) => request.url.endsWith('/attempts'));
    expect(attempts.map((request) => request.body)).toEqual([
      { messageId: 'm-1', error: 'Error: boom', payload: { n: 1 }, attempt: 3 },
      { messageId: 'm-1', error: 'Error: boom', payload: { n: 1 }, attempt: 3 },
    ]);
    expect(sent[0].body.claimId).toMatch(REQUEST_ID_PATTERN);
  });

  it('the delivery consumer refuses a delivery count that is not a whole number from 1', async () => {
    const { client, sent } = scripted('http://a', []);
    await expect(
      deliveries(client, 'orders').handle({ id: 'm-1', deliveryCount: 0 }, () => Promise.resolve()),
    ).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(0);
  });
});
