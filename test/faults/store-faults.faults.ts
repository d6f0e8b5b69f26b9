import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import calculateSlot from 'cluster-key-slot';
import { CLUSTER_SLOTS_REFRESH_MS } from '../../libs/store/src/redis/connection';
import { RedisClusterProcess } from '../support/redis-cluster';
import { RedisServerProcess, redisCli } from '../support/redis-server';
import { waitUntil } from '../support/time';
import {
  FLEET_POLICIES,
  call,
  lostState,
  seedFleetState,
  startFleetProcesses,
  type Fleet,
  type TripRecord,
} from '../support/fleet-state';
import { DecisionLoad, unavailableMs } from './decision-load';
import { writeFaultTable, type FaultRow } from './fault-table';
import { SdkLoad } from './sdk-load';

// The fault suite (npm run test:faults): real Redis servers and built coordinators, each fault
// caused for real under steady load, one table of what callers saw. Every Redis is the suite's
// own, on spare ports, killed by PID at the end.

/** The load's budget never runs dry (so every ask is a grant) and its window outlasts a case. */
const POLICIES = {
  ...FLEET_POLICIES,
  namespaces: {
    shop: {
      ...FLEET_POLICIES.namespaces.shop,
      default: { retryBudget: { ratio: 1, minRetriesPerSecond: 1000, windowSeconds: 120 } },
    },
  },
};
const STORE_TIMEOUT_MS = 100;
const FAULT_MS = 2000;
const CLUSTER_CONF = join(__dirname, '../../deploy/redis-cluster/redis-cluster.conf');
/** Inside the repository (an ignored folder), so the build's requires find node_modules. */
const PRIVATE_BUILD = join(__dirname, '../bench/results/faults-dist');

const rows: FaultRow[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ms = (value: number) => `${Math.round(value)} ms`;

/** The retries the store counts for `dep` now. */
async function counted(base: string, dep: string): Promise<number> {
  return (await call(base, 'GET', `/v1/shop/deps/${dep}`)).body.budget.retries as number;
}

/** Counted beyond granted, over `deps`; with `since`, only grants answered since then (the store was emptied then). */
async function overCounts(base: string, load: DecisionLoad, deps: string[]): Promise<{ over: number; under: number }> {
  let over = 0;
  let under = 0;
  for (const dep of deps) {
    const difference = (await counted(base, dep)) - (load.granted.get(dep)?.size ?? 0);
    if (difference > 0) over += difference;
    else under -= difference;
  }
  return { over, under };
}

interface Running {
  fleet: Fleet;
  trip: TripRecord;
  load: DecisionLoad;
  sdk: SdkLoad;
}

async function startUnderLoad(env: NodeJS.ProcessEnv, deps: string[]): Promise<Running> {
  const fleet = await startFleetProcesses(2, { SLUICE_STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS), ...env }, POLICIES);
  // Not running yet, so no afterAll stops it: a failed seed stops the coordinators here.
  const trip = await seedFleetState(fleet.urls[0]).catch(async (error: unknown) => {
    await fleet.close();
    throw error;
  });
  const load = new DecisionLoad(fleet.urls, deps);
  const sdk = new SdkLoad(fleet.urls, 'checkout');
  load.start();
  sdk.start();
  await sleep(1000);
  return { fleet, trip, load, sdk };
}

async function stopLoad({ load, sdk }: Running): Promise<void> {
  await load.stop();
  await sdk.stop();
}

/** After a fault, whatever happened: the load (if it still runs) and the fleet stopped. */
async function stopRunning(running: Running | undefined): Promise<void> {
  if (!running) return;
  await stopLoad(running).catch(() => undefined);
  await running.fleet.close();
}

const lostText = (lost: string[]) => (lost.length === 0 ? 'nothing' : lost.join(', '));

describe('the fault suite', () => {
  // A private copy of the build: a rebuild of dist/ meanwhile (deleteOutDir) cannot pull it away.
  beforeAll(() => {
    rmSync(PRIVATE_BUILD, { recursive: true, force: true });
    cpSync(join(__dirname, '../../dist'), PRIVATE_BUILD, { recursive: true });
    process.env.SLUICE_TEST_COORDINATOR_MAIN = join(PRIVATE_BUILD, 'apps/coordinator/src/main.js');
  });

  afterAll(() => {
    delete process.env.SLUICE_TEST_COORDINATOR_MAIN;
    rmSync(PRIVATE_BUILD, { recursive: true, force: true });
    const table = writeFaultTable(
      rows,
      `Fault suite (npm run test:faults), ${new Date().toISOString().slice(0, 10)}: two coordinators, ` +
        `SLUICE_STORE_TIMEOUT_MS=${STORE_TIMEOUT_MS}, steady retry asks on every dependency every 50 ms and SDK calls every 25 ms.`,
    );
    process.stdout.write(`\n${table}\n\n(also in test/bench/results/faults.md)\n`);
  });

  describe('a standalone Redis', () => {
    const deps = ['load-a', 'load-b'];
    let redis: RedisServerProcess;
    let running: Running | undefined;

    afterEach(async () => {
      await stopRunning(running);
      await redis?.cleanup();
      running = undefined;
    });

    it(`stopped (SIGSTOP) for ${FAULT_MS} ms, past the store timeout`, async () => {
      redis = await RedisServerProcess.start();
      running = await startUnderLoad({ SLUICE_REDIS_URL: redis.url }, deps);
      const from = performance.now();
      redis.pause();
      await sleep(FAULT_MS);
      redis.resume();
      const resumedAt = performance.now();
      await sleep(2000);
      await stopLoad(running);
      const [base] = running.fleet.urls;
      const errors = running.load.errorsOf(deps, from);
      const { over } = await overCounts(base, running.load, deps);
      const lost = await lostState(base, running.trip);
      rows.push({
        fault: `Redis SIGSTOP ${FAULT_MS / 1000} s`,
        errors: `${errors.length} asks answered 503, asked again with the same id`,
        recovery: ms(unavailableMs(errors, resumedAt)),
        lost: lostText(lost),
        overCounts: String(over),
        sdk: running.sdk.summary(),
      });
      expect(lost).toEqual([]);
      expect(over).toBe(0);
    });

    it.each([
      ['without persistence', {}],
      ['with AOF (appendfsync everysec)', { appendonly: 'yes', appendfsync: 'everysec' }],
    ])('killed (SIGKILL) and restarted %s', async (persistence, config) => {
      redis = await RedisServerProcess.start({ config });
      running = await startUnderLoad({ SLUICE_REDIS_URL: redis.url }, deps);
      // What AOF everysec may lose is the last second: give it that second.
      await sleep(1100);
      const from = performance.now();
      await redis.kill();
      await sleep(500);
      await redis.start();
      const restartedAt = performance.now();
      await sleep(2500);
      await stopLoad(running);
      const [base] = running.fleet.urls;
      const errors = running.load.errorsOf(deps, from);
      const lost = await lostState(base, running.trip);
      // Without persistence the store forgot every grant before the restart: count only what it holds.
      const { over, under } = await overCounts(base, running.load, deps);
      const resets = Number(/sluice_store_resets_total (\d+)/.exec((await call(base, 'GET', '/metrics')).body)?.[1]);
      rows.push({
        fault: `Redis SIGKILL + restart, ${persistence}`,
        errors: `${errors.length} asks answered 503, asked again with the same id`,
        recovery: ms(unavailableMs(errors, restartedAt)),
        lost: `${lostText(lost)}${under > 0 ? ` (${under} granted retries no longer counted)` : ''}; resets seen: ${resets}`,
        overCounts: String(over),
        sdk: running.sdk.summary(),
      });
      expect(over).toBe(0);
      if (persistence === 'without persistence') {
        expect(lost).toEqual(['breakers', 'budgets', 'idempotency records']);
        expect(resets).toBe(1);
      } else {
        expect(lost).toEqual([]);
        expect(resets).toBe(0);
      }
    });

    it('one of two coordinators killed (SIGKILL)', async () => {
      redis = await RedisServerProcess.start();
      running = await startUnderLoad({ SLUICE_REDIS_URL: redis.url }, deps);
      const from = performance.now();
      await running.fleet.coordinators[1].kill();
      await sleep(3000);
      await stopLoad(running);
      const [base] = running.fleet.urls;
      const errors = running.load.errorsOf(deps, from);
      const { over } = await overCounts(base, running.load, deps);
      const lost = await lostState(base, running.trip);
      rows.push({
        fault: 'one of two coordinators SIGKILL',
        errors: `${errors.length} asks sent to the dead instance, each asked again at once on the other`,
        recovery: ms(unavailableMs(errors, from)),
        lost: lostText(lost),
        overCounts: String(over),
        sdk: running.sdk.summary(),
      });
      expect(lost).toEqual([]);
      expect(over).toBe(0);
      expect(running.sdk.failures).toBe(0);
    });
  });

  describe('a Redis Cluster of 3 masters and 3 replicas (deploy/redis-cluster settings)', () => {
    let cluster: RedisClusterProcess;
    let running: Running | undefined;

    afterAll(async () => {
      await stopRunning(running);
      await cluster?.cleanup();
    });

    it('a master killed (SIGKILL) under steady load, SLUICE_DURABILITY=replica', async () => {
      const conf = readRedisConf(CLUSTER_CONF);
      const nodeTimeoutMs = Number(conf['cluster-node-timeout']);
      // The first full sync of each replica starts at once (not after the default 5 s).
      const config = { ...conf, 'repl-diskless-sync-delay': '0' };
      cluster = await RedisClusterProcess.start({ replicasPerMaster: 1, config, startTimeoutMs: 30_000 });
      await waitForReplicas(cluster);
      const topology = await clusterTopology(cluster);
      // The master that also holds the namespace's own keys (its policies, its dependency list,
      // its events): decisions for the other masters' dependencies must not need them.
      const victim = topology.masters.find((master) => owns(master, calculateSlot('shop')))!;
      const victimDeps = depsOwnedBy(victim, 2);
      const healthyDeps = topology.masters
        .filter((master) => master !== victim)
        .flatMap((master) => depsOwnedBy(master, 2));
      const deps = [...victimDeps, ...healthyDeps];
      running = await startUnderLoad(
        { SLUICE_REDIS_CLUSTER_NODES: cluster.nodes.join(','), SLUICE_DURABILITY: 'replica' },
        deps,
      );
      const completions = new Completions(running.fleet.urls);
      completions.start();
      await sleep(1000);

      const killedAt = performance.now();
      await cluster.servers[victim.index].kill();
      await waitUntil(
        async () => (await clusterTopology(cluster)).promoted(victim),
        30_000,
        () => 'no replica was promoted',
        50,
      );
      const promotedMs = performance.now() - killedAt;
      await sleep(2000);
      await completions.stop();
      await stopLoad(running);

      const base = running.fleet.urls[0];
      const victimErrors = running.load.errorsOf(victimDeps, killedAt);
      const healthyErrors = running.load.errorsOf(healthyDeps, killedAt);
      const unavailable = unavailableMs(victimErrors, killedAt);
      const { over } = await overCounts(base, running.load, deps);
      const lostCompletions = await completions.lost(base);
      const lost = await lostState(base, running.trip);
      rows.push({
        fault: `Cluster master SIGKILL (node-timeout ${nodeTimeoutMs} ms, full coverage no)`,
        errors:
          `failed slot: ${victimErrors.length} asks answered 503; healthy masters' slots: ${healthyErrors.length} ` +
          `(slowest answer ${ms(running.load.slowestOf(healthyDeps, killedAt))})`,
        recovery: `failed slot unavailable ${ms(unavailable)} (Redis promoted the replica after ${ms(promotedMs)})`,
        lost:
          `${lostText(lost)}; idempotency completions acknowledged: ${completions.acknowledged.length}, lost: ` +
          `${lostCompletions.length}`,
        overCounts: String(over),
        sdk: running.sdk.summary(),
      });
      // Sluice's part: it answers again within the slot map's refresh of the promotion, plus a
      // second for a loaded machine. Redis's own part (noticing the failure, electing the replica)
      // takes node-timeout and 1–4 s more here; both are in the table.
      expect(unavailable - promotedMs).toBeLessThanOrEqual(CLUSTER_SLOTS_REFRESH_MS + 1000);
      expect(healthyErrors.map((error) => ({ ...error, at: `${ms(error.at - killedAt)} after the kill` }))).toEqual([]);
      expect(over).toBe(0);
      expect(completions.acknowledged.length).toBeGreaterThan(0);
      expect(lostCompletions).toEqual([]);
    });
  });
});

/** A redis.conf's directives (the cluster's own file names and directory are the harness's). */
function readRedisConf(path: string): Record<string, string> {
  const directives: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^([a-z-]+)\s+(.*)$/.exec(line.trim());
    if (match && !['cluster-config-file', 'cluster-enabled'].includes(match[1])) {
      directives[match[1]] = match[2].replace(/^"(.*)"$/, '$1');
    }
  }
  return directives;
}

interface MasterNode {
  id: string;
  index: number;
  slots: Array<[number, number]>;
}

/** The masters (with their slots) and replicas, as one live node tells it. */
async function clusterTopology(cluster: RedisClusterProcess) {
  const live = cluster.servers.find((server) => server.running)!;
  const lines = (await redisCli(live.port, ['CLUSTER', 'NODES'])).trim().split('\n');
  const nodes = lines.map((line) => {
    const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
    const port = Number(address.split('@')[0].split(':')[1]);
    return { id, port, flags, masterId, slots };
  });
  const masters: MasterNode[] = nodes
    .filter((node) => node.flags.includes('master') && !node.flags.includes('fail') && node.slots.length > 0)
    .map((node) => ({
      id: node.id,
      index: cluster.servers.findIndex((server) => server.port === node.port),
      slots: node.slots.map((range) => {
        const [start, end = start] = range.split('-');
        return [Number(start), Number(end)] as [number, number];
      }),
    }));
  return {
    masters,
    replicas: nodes.filter((node) => node.flags.includes('slave')),
    /** True once another master serves the slots `victim` had. */
    promoted: (victim: MasterNode) =>
      masters.some((master) => master.id !== victim.id && master.slots.some(([s]) => s === victim.slots[0][0])),
  };
}

/** Waits until every replica is known and its link to its master is up, so a failover has the data. */
async function waitForReplicas(cluster: RedisClusterProcess): Promise<void> {
  await waitUntil(
    async () => {
      const { replicas } = await clusterTopology(cluster);
      if (replicas.length !== cluster.servers.length / 2) return false;
      for (const replica of replicas) {
        const info = await redisCli(replica.port, ['INFO', 'replication']);
        if (!info.includes('master_link_status:up')) return false;
      }
      return true;
    },
    60_000,
    () => 'the replicas never synced',
    100,
  );
}

/** `count` dependency names whose keys (`{shop/<dep>}`) live on `master`. */
function depsOwnedBy(master: MasterNode, count: number): string[] {
  const names: string[] = [];
  for (let i = 0; names.length < count; i++) {
    if (owns(master, calculateSlot(`shop/load-${i}`))) names.push(`load-${i}`);
  }
  return names;
}

function owns(master: MasterNode, slot: number): boolean {
  return master.slots.some(([start, end]) => slot >= start && slot <= end);
}

/**
 * Idempotency keys claimed and completed one after another, across every slot: the keys whose
 * completion was acknowledged (204) must be completed afterwards.
 */
class Completions {
  readonly acknowledged: string[] = [];
  private running = false;
  private loop?: Promise<void>;

  constructor(private readonly urls: string[]) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      for (let i = 0; this.running; i++) {
        const key = `order-${i}`;
        const base = this.urls[i % this.urls.length];
        await this.complete(base, key).catch(() => undefined);
        await sleep(10);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** The acknowledged keys that are not completed now. */
  async lost(base: string): Promise<string[]> {
    const lost: string[] = [];
    for (const key of this.acknowledged) {
      const claim = await call(base, 'POST', `/v1/shop/idempotency/${key}/claim`, { fingerprint: `fp-${key}` });
      if (claim.status !== 200) lost.push(key);
    }
    return lost;
  }

  private async complete(base: string, key: string): Promise<void> {
    const claim = await call(base, 'POST', `/v1/shop/idempotency/${key}/claim`, { fingerprint: `fp-${key}` });
    if (claim.status !== 201) return;
    const response = { status: 200, headers: {}, body: key, bodyEncoding: 'utf8' };
    const put = await call(base, 'PUT', `/v1/shop/idempotency/${key}`, { token: claim.body.token, response });
    if (put.status === 204) this.acknowledged.push(key);
  }
}
