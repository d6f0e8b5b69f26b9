import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sluice, isLimitedError, type LimitedError } from '@sluice/client';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy, type AdmitDecision } from '@sluice/protocol';
import type { TestCoordinator } from '../support/test-coordinator';
import { startCountingProxy, type CountingProxy } from '../support/counting-proxy';
import { waitUntil } from '../support/time';
import { metric, startShopCoordinator } from '../support/sdk';

/** A loopback server answering `/<dep>/…?ms=N` after N ms, counting the requests in progress per dependency. */
interface GaugedServer {
  url: string;
  /** Requests received, per dependency. */
  received: Map<string, number>;
  /** Most requests in progress at once, per dependency. */
  peak: Map<string, number>;
  close(): Promise<void>;
}

async function startGaugedServer(): Promise<GaugedServer> {
  const received = new Map<string, number>();
  const peak = new Map<string, number>();
  const inProgress = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://loopback');
    const dep = url.pathname.split('/')[1];
    received.set(dep, (received.get(dep) ?? 0) + 1);
    const now = (inProgress.get(dep) ?? 0) + 1;
    inProgress.set(dep, now);
    peak.set(dep, Math.max(peak.get(dep) ?? 0, now));
    let done = false;
    // Counted out when the answer is sent, before the client can have it (and release its lease).
    const finish = () => {
      if (done) return;
      done = true;
      inProgress.set(dep, (inProgress.get(dep) ?? 1) - 1);
    };
    res.on('close', finish);
    req.resume();
    setTimeout(
      () => {
        finish();
        res.end('ok');
      },
      Number(url.searchParams.get('ms') ?? 0),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    peak,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A counting proxy to the coordinator that also keeps the lease ids granted in admit answers. */
type LeaseLedgerProxy = CountingProxy & { granted: Map<string, string[]> };

async function startLeaseLedgerProxy(target: string): Promise<LeaseLedgerProxy> {
  const granted = new Map<string, string[]>();
  const proxy = await startCountingProxy(target, {
    inspect: {
      match: /^POST \/v1\/shop\/deps\/[^/]+\/admit$/,
      onBody: (line, body) => {
        const dependency = line.split('/')[4];
        const lease = (JSON.parse(body.toString('utf8')) as AdmitDecision).lease;
        if (lease) granted.set(dependency, [...(granted.get(dependency) ?? []), lease.id]);
      },
    },
  });
  return Object.assign(proxy, { granted });
}

const releasedLeases = (proxy: LeaseLedgerProxy, dependency: string, status: number) =>
  proxy.answered
    .map((line) => new RegExp(`^DELETE /v1/shop/deps/${dependency}/leases/([A-Za-z0-9-]+) (\\d+)$`).exec(line))
    .filter((match) => match !== null && Number(match[2]) === status)
    .map((match) => match![1]);

async function rejection(promise: Promise<unknown>): Promise<LimitedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isLimitedError(error)) throw new Error(`expected a LimitedError, got ${String(error)}`);
  return error;
}

const HOUR = 3_600_000;

describe('rate and concurrency limits, honoured by the SDK against the real coordinator', () => {
  let coordinator: TestCoordinator;
  let proxy: LeaseLedgerProxy;
  let server: GaugedServer;
  let sluice: Sluice;

  beforeAll(async () => {
    coordinator = await startShopCoordinator({
      bulkhead: { concurrency: { limit: 2, leaseMs: 2000 } },
      metered: { rateLimit: { rate: 3, periodMs: HOUR, burst: 3 } },
      batch: { rateLimit: { rate: 3, periodMs: HOUR, burst: 3 } },
      // Short leases: an attempt that outlives one keeps it only by renewing it. 400 ms leaves a
      // renewal (due at 200 ms) that long to arrive on a loaded machine.
      'long-calls': { concurrency: { limit: 1, leaseMs: 400 }, backoff: { baseMs: 10, capMs: 50, jitter: 'full' } },
    });
    proxy = await startLeaseLedgerProxy(coordinator.url);
    server = await startGaugedServer();
    // The coordinator's routes answer warm, as in a running fleet.
    await (await fetch(`${coordinator.url}/v1/shop/deps/warm-up`)).arrayBuffer();
    sluice = new Sluice({ baseUrls: [proxy.url], namespace: 'shop', logger: false });
  });
  afterAll(async () => {
    await sluice.close();
    await server.close();
    await proxy.close();
    await coordinator.close();
  });

  const inUse = (dependency: string) =>
    metric(coordinator.url, 'sluice_concurrency_in_use', { namespace: 'shop', dependency });
  const admit = async (dependency: string): Promise<AdmitDecision> =>
    (await fetch(`${coordinator.url}/v1/shop/deps/${dependency}/admit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    }).then((res) => res.json())) as AdmitDecision;

  it('lets at most 2 of 24 concurrent calls reach the server, and releases every lease', async () => {
    // Made and used at once: the first calls wait for the dependency's first view to learn its limit.
    const bulkhead = sluice.dependency('bulkhead');
    const calls = Array.from({ length: 24 }, (_, i) =>
      i % 2 === 0
        ? sluice.fetch('bulkhead', `${server.url}/bulkhead/fetch-${i}?ms=40`).then((res) => res.text())
        : bulkhead.execute(async ({ signal, headers }) => {
            const res = await fetch(`${server.url}/bulkhead/execute-${i}?ms=40`, { signal, headers });
            return res.text();
          }),
    );
    const started = Date.now();
    expect(await Promise.all(calls)).toEqual(new Array(24).fill('ok'));
    const elapsed = Date.now() - started;
    await sluice.flush();

    expect(server.received.get('bulkhead')).toBe(24);
    expect(server.peak.get('bulkhead')).toBe(2);
    // 24 calls two at a time, 40 ms each: at least 12 rounds.
    expect(elapsed).toBeGreaterThanOrEqual(12 * 40);
    const admits = proxy.count((line) => line === 'POST /v1/shop/deps/bulkhead/admit');
    const granted = proxy.granted.get('bulkhead') ?? [];
    const released = releasedLeases(proxy, 'bulkhead', 204);
    console.log(`24 calls through a bulkhead of 2 in ${elapsed} ms: ${admits} admits, ${released.length} releases`);
    // Every lease granted was released (including one granted in an answer the SDK stopped waiting for).
    expect(granted.length).toBeGreaterThanOrEqual(2);
    expect([...released].sort()).toEqual([...granted].sort());
    // Waiters are woken as this process's slots come back, rather than all polling the coordinator.
    expect(admits).toBeLessThanOrEqual(24 * 8);
    // Every lease is back: the coordinator counts none in use, and grants both slots again at once.
    expect(await inUse('bulkhead')).toBe(0);
    const [first, second] = [await admit('bulkhead'), await admit('bulkhead')];
    expect([first.allow, second.allow]).toEqual([true, true]);
    for (const granted of [first, second]) {
      const res = await fetch(`${coordinator.url}/v1/shop/deps/bulkhead/leases/${granted.lease!.id}`, {
        method: 'DELETE',
      });
      expect(res.status).toBe(204);
    }
  });

  it('refuses the 4th call in the hour with a LimitedError, without reaching the server', async () => {
    const metered = sluice.dependency('metered');
    for (let i = 0; i < 3; i++) expect(await (await metered.fetch(`${server.url}/metered/${i}`)).text()).toBe('ok');
    const started = Date.now();
    const error = await rejection(metered.fetch(`${server.url}/metered/4`));
    // The wait (20 minutes) would outlast the deadline: refused at once.
    expect(Date.now() - started).toBeLessThan(1000);
    expect(error).toMatchObject({ reason: 'rate_limited', attempts: 0, dependency: 'metered' });
    expect(error.retryAfterMs).toBeGreaterThan(HOUR / 3 - 60_000);
    expect(server.received.get('metered')).toBe(3);
  });

  it('charges a call’s cost against the rate limit', async () => {
    const batch = sluice.dependency('batch');
    expect((await batch.fetch(`${server.url}/batch/three`, { cost: 3 })).status).toBe(200);
    expect(await rejection(batch.execute(() => 'never sent'))).toMatchObject({ reason: 'rate_limited' });
    expect(server.received.get('batch')).toBe(1);
  });

  it('renews the lease of a call that outlives it, so no second call gets in meanwhile', async () => {
    const longCalls = sluice.dependency('long-calls', { timeoutMs: 2000 });
    const calls = [0, 1, 2].map((i) => longCalls.fetch(`${server.url}/long-calls/${i}?ms=1000`).then((r) => r.text()));
    expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok']);
    await sluice.flush();
    expect(server.peak.get('long-calls')).toBe(1);
    expect([...releasedLeases(proxy, 'long-calls', 204)].sort()).toEqual([...proxy.granted.get('long-calls')!].sort());
    const renewals = proxy.answered.filter((line) =>
      /^POST \/v1\/shop\/deps\/long-calls\/leases\/.+\/renew 200$/.test(line),
    );
    // Each 1,000 ms call held a 400 ms lease: renewed every ~200 ms.
    expect(renewals.length).toBeGreaterThanOrEqual(3 * 3);
    expect(await inUse('long-calls')).toBe(0);
  });

  it('an unlimited dependency of the same client still makes no per-call request to the coordinator', async () => {
    const plain = sluice.dependency('plain');
    for (let i = 0; i < 200; i++) expect((await plain.fetch(`${server.url}/plain/${i}`)).status).toBe(200);
    expect(server.received.get('plain')).toBe(200);
    const perCall = proxy.count((line) => /^POST \/v1\/shop\/deps\/plain\//.test(line));
    const views = proxy.count((line) => line === 'GET /v1/shop/deps/plain');
    expect(perCall).toBe(0);
    expect(views).toBeLessThanOrEqual(2);
  });
});

describe('an admit answered after the decision timeout', () => {
  it('still has its lease released, while the call goes on under the local limits', async () => {
    // A scripted coordinator: the policy has a concurrency limit, and admit answers only after 150 ms.
    const seen: string[] = [];
    const policy = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, { concurrency: { limit: 5, leaseMs: 10_000 } });
    const view = {
      namespace: 'shop',
      dependency: 'slow-admit',
      breaker: { state: 'closed', since: 0, openUntil: null, failureRate: 0, slowRate: 0, calls: 0 },
      budget: { retries: 0, requests: 0, limit: 100, windowSeconds: 10 },
      latency: { p50: null, p95: null, p99: null, count: 0 },
      policy,
    };
    const scripted: Server = createServer((req, res) => {
      const line = `${req.method} ${req.url}`;
      seen.push(line);
      req.resume();
      const json = (body: unknown, status = 200) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (line === 'GET /v1/shop/deps/slow-admit') json(view);
      else if (line === 'POST /v1/shop/reports') json({ deps: {} });
      else if (line === 'POST /v1/shop/deps/slow-admit/admit') {
        const lease = { id: 'late-lease', expiresAt: Date.now() + 10_000 };
        setTimeout(
          () => json({ allow: true, reason: 'granted', retryAfterMs: 0, breaker: { state: 'closed' }, lease }),
          150,
        );
      } else if (req.method === 'DELETE') {
        res.writeHead(204);
        res.end();
      } else json({ statusCode: 404, code: 'not_found', message: 'no such route' }, 404);
    });
    await new Promise<void>((resolve) => scripted.listen(0, '127.0.0.1', resolve));
    const server = await startGaugedServer();
    const sluice = new Sluice({
      baseUrls: [`http://127.0.0.1:${(scripted.address() as AddressInfo).port}`],
      namespace: 'shop',
      logger: false,
      sse: false,
      pollIntervalMs: 60_000,
    });
    const fallbacks: boolean[] = [];
    sluice.onFallback(({ active }) => fallbacks.push(active));
    try {
      const slow = sluice.dependency('slow-admit');
      expect(await (await slow.fetch(`${server.url}/slow-admit/1`)).text()).toBe('ok');
      // The SDK stopped waiting after 50 ms and the local limits let the call out; a late answer is
      // an answer, so the SDK did not switch to its fallback.
      expect(fallbacks).toEqual([]);
      await waitUntil(
        () => seen.includes('DELETE /v1/shop/deps/slow-admit/leases/late-lease'),
        5000,
        () => `the late lease was never released: ${seen.join(', ')}`,
      );
      expect(server.received.get('slow-admit')).toBe(1);
    } finally {
      await sluice.close();
      await server.close();
      scripted.closeAllConnections();
      await new Promise<void>((resolve) => scripted.close(() => resolve()));
    }
  });
});
