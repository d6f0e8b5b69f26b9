import { CoordinatorClient, expressIdempotency, idempotencyOf } from '@sluice/client';
import type { IdempotencyKeyView } from '@sluice/protocol';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startScriptedProxy, type ProxyAnswer, type ScriptedProxy } from '../support/scripted-proxy';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// The coordinator cut between an idempotent handler's claim and its completion: what the caller
// gets, what a later duplicate gets, and how often the handler ran. The middleware reaches the
// coordinator through a proxy that drops or loses the completion (PUT) on cue. Safe by default:
// the handler never runs twice for one key; what cannot be stored in time is refused, not re-run.

const LEASE_MS = 600;
const COMPLETE = /^PUT \/v1\/shop\/idempotency\//;

describe('idempotency with the coordinator cut between claim and complete', () => {
  let coordinator: TestCoordinator;
  let proxy: ScriptedProxy;
  let app: Server;
  let appUrl: string;
  /** Each run of the handler, with whether the middleware said an earlier holder vanished. */
  let runs: Array<{ key: string; recovered: boolean }>;
  let errors: string[];
  let sequence = 0;

  beforeAll(async () => {
    coordinator = await testCoordinator({ listen: true });
    proxy = await startScriptedProxy(coordinator.url);
    const client = new CoordinatorClient({ baseUrl: proxy.url, namespace: 'shop' });
    const idempotent = expressIdempotency(client, {
      leaseMs: LEASE_MS,
      onError: (error) => errors.push((error as Error).message),
    });
    app = createServer((request, response) =>
      idempotent(request, response, () => {
        runs.push({ key: String(request.headers['idempotency-key']), recovered: idempotencyOf(request)!.recovered });
        response.writeHead(201, { 'content-type': 'application/json', 'x-order-id': `ord_${runs.length}` });
        response.end(JSON.stringify({ charged: runs.length }));
      }),
    );
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    runs = [];
    errors = [];
    proxy.script(() => 'forward');
  });
  afterAll(async () => {
    app.closeAllConnections();
    await new Promise<void>((resolve) => app.close(() => resolve()));
    await proxy.close();
    await coordinator.close();
  });

  const charge = async (key: string) => {
    const response = await fetch(`${appUrl}/charges`, { method: 'POST', headers: { 'idempotency-key': key } });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed'),
      order: response.headers.get('x-order-id'),
      body: (await response.json()) as Record<string, unknown>,
    };
  };
  const keyView = async (key: string) =>
    (await (await fetch(`${coordinator.url}/v1/shop/idempotency/${key}`)).json()) as IdempotencyKeyView;
  /** Cuts the first `n` completions as `how`; everything else goes through. */
  const cutCompletions = (n: number, how: ProxyAnswer) => {
    let cut = 0;
    proxy.script((line) => (COMPLETE.test(line) && cut++ < n ? how : 'forward'));
  };

  it('a completion whose connection drops is asked again: the caller gets the response, a duplicate its replay, the handler ran once', async () => {
    const key = `cut-drop-${++sequence}`;
    cutCompletions(1, 'drop');
    expect(await charge(key)).toEqual({ status: 201, replayed: null, order: 'ord_1', body: { charged: 1 } });
    expect(proxy.seen.filter((seen) => COMPLETE.test(seen.line)).map((seen) => seen.answer)).toEqual([
      'drop',
      'forward',
    ]);
    expect((await keyView(key)).state).toBe('completed');
    expect(await charge(key)).toEqual({ status: 201, replayed: 'true', order: 'ord_1', body: { charged: 1 } });
    expect(runs).toEqual([{ key, recovered: false }]);
    expect(errors).toEqual([]);
  });

  it('a completion stored but whose answer is lost is asked again with the same token, which keeps the first response', async () => {
    const key = `cut-lose-${++sequence}`;
    cutCompletions(1, 'lose');
    expect(await charge(key)).toEqual({ status: 201, replayed: null, order: 'ord_1', body: { charged: 1 } });
    expect(await charge(key)).toEqual({ status: 201, replayed: 'true', order: 'ord_1', body: { charged: 1 } });
    expect(runs).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('a coordinator away for a moment longer than one call: the completion is kept trying within the lease', async () => {
    const key = `cut-blip-${++sequence}`;
    // Every exchange of the first completion call fails (its first try and its re-asks).
    cutCompletions(3, 'drop');
    expect(await charge(key)).toEqual({ status: 201, replayed: null, order: 'ord_1', body: { charged: 1 } });
    // The caller got the work's answer at once; the response is stored as soon as the coordinator answers.
    const deadline = Date.now() + LEASE_MS;
    while ((await keyView(key)).state !== 'completed' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await charge(key)).toEqual({ status: 201, replayed: 'true', order: 'ord_1', body: { charged: 1 } });
    expect(runs).toHaveLength(1);
    expect(errors.length).toBeGreaterThan(0); // told that the first call failed
  });

  it('a coordinator away for the whole lease: the caller still gets the response; a duplicate is refused (409) during the lease and after it, and the handler never runs twice', async () => {
    const key = `cut-long-${++sequence}`;
    proxy.script((line) => (COMPLETE.test(line) ? 'drop' : 'forward'));
    // The work was done: its answer is sent, and onError says it could not be stored.
    expect(await charge(key)).toEqual({ status: 201, replayed: null, order: 'ord_1', body: { charged: 1 } });
    expect(errors.length).toBeGreaterThan(0);
    expect(await charge(key)).toMatchObject({ status: 409, body: { code: 'in_flight', state: 'in_flight' } });
    const view = await keyView(key);
    expect(view.state).toBe('in_flight');
    await coordinator.waitPast(view.leaseExpiresAt!);
    // After the lease the key is recovered, but by default an attempt that may have partly run is
    // not run again: the duplicate is refused too, and the key stays held.
    expect(await charge(key)).toMatchObject({ status: 409, body: { code: 'in_flight', state: 'in_flight' } });
    expect(runs).toEqual([{ key, recovered: false }]);
    expect((await keyView(key)).state).toBe('in_flight');
  });
});
