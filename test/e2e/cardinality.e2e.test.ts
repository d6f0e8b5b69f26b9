import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import {
  DependencyRegistry,
  REGISTRY_RETENTION_MS,
} from '../../apps/coordinator/src/dependencies/dependency-registry.service';
import { PolicyService } from '../../apps/coordinator/src/policies/policy.service';
import { STORE } from '../../apps/coordinator/src/store/store.provider';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const NAMESPACE_CAP = 50;
const DEPENDENCY_CAP = 100;

type Inject = (request: { method: string; url: string; payload?: object }) => Promise<{
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
}>;

/** Runs `count` requests made by `request(i)`, `concurrency` at a time; resolves with their statuses. */
async function many(count: number, concurrency: number, request: (i: number) => Promise<{ statusCode: number }>) {
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const { statusCode } = await request(next++);
        statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
      }
    }),
  );
  return Object.fromEntries(statuses);
}

/** The distinct label values of `label` among the series of /metrics that carry it. */
function labelValues(metrics: string, label: string): Set<string> {
  const values = new Set<string>();
  for (const match of metrics.matchAll(new RegExp(`[{,]${label}="([^"]*)"`, 'g'))) values.add(match[1]);
  return values;
}

describe('bounded cardinality: names nobody registered never become series or map entries', () => {
  let coordinator: TestCoordinator;
  let app: NestFastifyApplication;
  let inject: Inject;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: true,
      policies: {},
      config: { maxNamespaces: NAMESPACE_CAP, maxDependenciesPerNamespace: DEPENDENCY_CAP },
    });
    app = coordinator.app;
    inject = app.getHttpAdapter().getInstance().inject.bind(app.getHttpAdapter().getInstance()) as unknown as Inject;
  });

  afterAll(() => coordinator?.close());

  const report = (namespace: string, dep: string) =>
    inject({
      method: 'POST',
      url: `/v1/${namespace}/reports`,
      payload: { reporter: 'pod-1', deps: [{ dep, requests: 1, successes: 1, failures: 0, slow: 0 }] },
    });

  it('reads 5,000 unknown dependencies and 2,000 new namespaces within the caps', async () => {
    expect((await report('shop', 'payments-api')).statusCode).toBe(200);

    // Reads of names nobody registered, and asks that register nothing.
    expect(await many(5000, 50, (i) => inject({ method: 'GET', url: `/v1/shop/deps/unknown-${i}` }))).toEqual({
      200: 5000,
    });
    const notRetriable = await many(500, 50, (i) =>
      inject({ method: 'POST', url: `/v1/shop/deps/typo-${i}/retry`, payload: { attempt: 1, status: 404 } }),
    );
    expect(notRetriable).toEqual({ 200: 500 });
    expect(
      await many(200, 50, (i) => inject({ method: 'DELETE', url: `/v1/shop/deps/gone-${i}/leases/l-${i}` })),
    ).toEqual({ 404: 200 });

    // 2,000 namespaces try to hold state: the cap lets the first ones in, then answers 422.
    const namespaces = await many(2000, 20, (i) => report(`tenant-${i}`, 'search'));
    expect(namespaces).toEqual({ 200: NAMESPACE_CAP - 1, 422: 2000 - NAMESPACE_CAP + 1 });
    const refused = await report('tenant-late', 'search');
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'too_many_namespaces',
      details: [{ field: 'ns' }],
    });
    // And 2,000 more namespaces are only read.
    expect(await many(2000, 50, (i) => inject({ method: 'GET', url: `/v1/reader-${i}/deps/search` }))).toEqual({
      200: 2000,
    });

    const metrics = (await inject({ method: 'GET', url: '/metrics' })).body;
    const namespacesLabelled = labelValues(metrics, 'namespace');
    const dependenciesLabelled = labelValues(metrics, 'dependency');
    expect(namespacesLabelled.size).toBeLessThanOrEqual(NAMESPACE_CAP + 1); // + _unregistered
    expect([...namespacesLabelled].filter((ns) => ns.startsWith('reader-'))).toEqual([]);
    expect([...dependenciesLabelled].sort()).toEqual(['_unregistered', 'payments-api', 'search']);
    expect(metrics).toContain(
      'sluice_retry_decisions_total{namespace="_unregistered",dependency="_unregistered",result="not_retriable"} 500',
    );

    const registry = app.get(DependencyRegistry);
    expect(registry.size).toBe(NAMESPACE_CAP); // shop/payments-api and one per admitted tenant
    const store = app.get<{ rememberedNamespaces(): number }>(STORE);
    expect(store.rememberedNamespaces()).toBe(NAMESPACE_CAP);
    const policies = app.get(PolicyService) as unknown as {
      cache: { size: number };
      watcher: { size: number };
    };
    expect(policies.cache.size).toBeLessThanOrEqual(1000);
    expect(policies.watcher.size).toBeLessThanOrEqual(1000);
  }, 120_000); // about 10,000 requests: seconds alone, longer beside another suite on 2 cores

  it('removes the series of a dependency once it is forgotten', async () => {
    const registry = app.get(DependencyRegistry);
    expect((await inject({ method: 'GET', url: '/metrics' })).body).toContain('dependency="payments-api"');
    registry.forgetUnused(Date.now() + REGISTRY_RETENTION_MS + 1);
    const metrics = (await inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).not.toContain('dependency="payments-api"');
    expect(registry.size).toBe(0);
  });

  it('answers HEAD on the event stream with its headers and no stream, counting no client', async () => {
    const head = await inject({ method: 'HEAD', url: '/v1/shop/events' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(head.body).toBe('');
    expect((await inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^sluice_event_stream_clients 0$/m);
  });
});
