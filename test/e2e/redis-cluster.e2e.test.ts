import { spawn } from 'node:child_process';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { createRedisClient, disconnectRedisClient, type RedisStore } from '@sluice/store';
import { redisStoreUnderTest, redisStoresUnderTest } from '../../libs/store/test/redis-under-test';
import { describeConcurrencyConformance } from '../../libs/store/test/concurrency-conformance';
import { describeDeadLetterBoundsConformance } from '../../libs/store/test/dead-letter-bounds-conformance';
import { describeForcedListingConformance } from '../../libs/store/test/forced-listing-conformance';
import { describeAdaptiveBudgetConformance } from '../../libs/store/test/adaptive-budget-conformance';
import { describeBreakerConformance } from '../../libs/store/test/breaker-conformance';
import { describeEdgeConformance } from '../../libs/store/test/edge-conformance';
import { edgeRedisStoreUnderTest } from '../../libs/store/test/edge-redis-under-test';
import { describeLimitsConformance } from '../../libs/store/test/limits-conformance';
import { describeRetryBatchConformance } from '../../libs/store/test/retry-batch-conformance';
import { describeStoreConformance } from '../../libs/store/test/store-conformance';
import { RedisClusterProcess } from '../support/redis-cluster';
import { deleteKeysWithPrefix } from '../support/redis';
import { openEventStream } from '../support/sse';
import { describeDeliveryConsumer, describeIdempotentApp, startCoordinators } from '../support/sdk-suites';
import { testCoordinator, type TestCoordinator, type TestInstance } from '../support/test-coordinator';

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The built store's connection module (npm run build). */
const CONNECTION_BUILD = join(__dirname, '../../dist/libs/store/src/redis/connection.js');

let cluster: Promise<RedisClusterProcess> | undefined;
const startedCluster = () => (cluster ??= RedisClusterProcess.start());

afterAll(async () => {
  if (cluster) await (await cluster).cleanup();
});

async function clusterClient(nodes: string[]): Promise<Cluster> {
  const client = createRedisClient({ clusterNodes: nodes, commandTimeoutMs: 2000 }) as Cluster;
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

describeStoreConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster'),
);
describeBreakerConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-breakers'),
);
describeLimitsConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-limits'),
);

describeEdgeConformance('RedisStore (3-master Cluster)', async () =>
  edgeRedisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-edges'),
);

describeRetryBatchConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-retry-batches'),
);
describeAdaptiveBudgetConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-adaptive-budgets'),
);

describeConcurrencyConformance('RedisStore (3-master Cluster, 8 connections)', async () =>
  redisStoresUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-concurrency', 8),
);

describeDeadLetterBoundsConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-bounds'),
);
describeForcedListingConformance('RedisStore (3-master Cluster)', async () =>
  redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-forced-listing'),
);

describeIdempotentApp('Redis Cluster', async () =>
  startCoordinators({ redisClusterNodes: (await startedCluster()).nodes }),
);
describeDeliveryConsumer('Redis Cluster', async () =>
  startCoordinators({ redisClusterNodes: (await startedCluster()).nodes }),
);

describe('store epochs on Redis Cluster: one marker per master', () => {
  it('reads one epoch per master, and gives a new one only to the shard whose marker is gone', async () => {
    const subject = await redisStoreUnderTest({ clusterNodes: (await startedCluster()).nodes }, 'cluster-epochs');
    try {
      const store = subject.store as RedisStore;
      const client = store.client as Cluster;
      const first = await store.readStoreEpochs('first');
      // Three masters, three shards, each marker's slot on a different master.
      expect(first).toHaveLength(3);
      const owners = first.map(({ shard }) => client.slots[calculateSlot(subject.redis!.keys.storeEpoch(shard))]?.[0]);
      expect(new Set(owners).size).toBe(3);
      expect(first.every((shard) => shard.epoch === 'first' && shard.created)).toBe(true);
      // One master came back empty: only its marker is gone (only this prefix's key is deleted).
      const [lost, ...kept] = first;
      await client.del(subject.redis!.keys.storeEpoch(lost.shard));
      expect(await store.readStoreEpochs('second')).toEqual([
        { shard: lost.shard, epoch: 'second', created: true },
        ...kept.map((shard) => ({ ...shard, created: false })),
      ]);
    } finally {
      await subject.cleanup();
    }
  });
});

describe('retry budget end to end on Redis Cluster', () => {
  let fleet: TestCoordinator;
  let a: TestInstance;
  let b: TestInstance;
  let nodes: string[];

  beforeAll(async () => {
    nodes = (await startedCluster()).nodes;
    fleet = await testCoordinator({ listen: true, instances: 2, config: { redisClusterNodes: nodes } });
    [a, b] = fleet.instances;
  });
  afterAll(() => fleet?.close());

  it('holds one budget per dependency across two instances, with dependencies spread over the masters', async () => {
    const dependencies = ['payments-api', 'inventory', 'search', 'email', 'ledger', 'fraud'];
    await Promise.all(
      dependencies.map((dep, i) =>
        post(`${a.url}/v1/shop/reports`, {
          reporter: 'pod-1',
          deps: [{ dep, requests: 100 * (i + 1), successes: 1, failures: 0, slow: 0 }],
        }).then((res) => expect(res.status).toBe(200)),
      ),
    );
    for (const [i, dep] of dependencies.entries()) {
      const limit = Math.floor(0.1 * 100 * (i + 1) + 100);
      const answers = await Promise.all(
        Array.from({ length: limit + 20 }, (_, n) =>
          post(`${(n % 2 === 0 ? a : b).url}/v1/shop/deps/${dep}/retry`, { attempt: 1, idempotent: true }).then(
            (res) => res.json() as Promise<{ allow: boolean; reason: string }>,
          ),
        ),
      );
      expect(answers.filter((answer) => answer.allow)).toHaveLength(limit);
      expect(answers.filter((answer) => answer.reason === 'budget_exhausted')).toHaveLength(20);
    }

    // The keys really are spread: more than one master holds budget keys.
    const client = await clusterClient(nodes);
    const holders = await Promise.all(
      client.nodes('master').map(async (node) => {
        if (node.status === 'wait') await node.connect();
        return (await node.keys(`${fleet.keyPrefix}:{shop/*}:budget`)).length;
      }),
    );
    expect(holders.filter((count) => count > 0).length).toBeGreaterThan(1);
    await deleteKeysWithPrefix(client, `${fleet.keyPrefix}:{shop/`);
    disconnectRedisClient(client);
  });

  it('carries a trip through instance A to an event stream on instance B over sharded pub/sub', async () => {
    const stream = await openEventStream(`${b.url}/v1/shop/events?deps=payments-api,ledger`);
    await stream.next((frame) => frame.event === 'breaker' && (frame.data as { dep: string }).dep === 'ledger');
    const sentAt = Date.now();
    const trip = await post(`${a.url}/admin/v1/shop/breakers/ledger/trip`, { reason: 'cluster drill' });
    expect(trip.status).toBe(200);
    const event = await stream.next(
      (frame) => frame.event === 'breaker' && (frame.data as { state: string }).state === 'forced_open',
    );
    expect(event.data).toMatchObject({ dep: 'ledger', state: 'forced_open' });
    console.log(`cluster: trip through A seen on B after ${event.receivedAt - sentAt} ms`);
    stream.close();
  });
});

// A process holding a closed Cluster client exits (a child process: jest keeps its own alive).
describe('a Cluster client closed while it reads the slot map', () => {
  it('lets its process exit: no refresh timer is left behind', async () => {
    const { nodes } = await startedCluster();
    const script = `
      const { createRedisClient, disconnectRedisClient } = require(${JSON.stringify(CONNECTION_BUILD)});
      const client = createRedisClient({ clusterNodes: ${JSON.stringify(nodes)}, commandTimeoutMs: 2000 });
      client.on('error', () => undefined);
      // Closed just as its periodic read of the slot map has started, so that read is under way.
      const refresh = client.refreshSlotsCache.bind(client);
      let ready = false;
      client.refreshSlotsCache = (callback) => {
        refresh(callback);
        if (ready && callback) {
          ready = false;
          disconnectRedisClient(client);
        }
      };
      client.once('ready', () => (ready = true));`;
    const child = spawn(process.execPath, ['-e', script], { stdio: 'pipe' });
    let output = '';
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<'running'>((resolve) => (timer = setTimeout(resolve, 10_000, 'running'))),
    ]);
    clearTimeout(timer);
    if (code === 'running') child.kill('SIGKILL');
    expect({ code, output }).toEqual({ code: 0, output: '' });
  });
});
