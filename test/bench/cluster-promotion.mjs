// Redis Cluster's own failover time, with no Sluice in the way: six redis-servers on spare ports
// (3 masters + 3 replicas, no persistence), a master SIGKILLed, its replica's ROLE polled every
// 10 ms until it answers `master`. Prints the time from the kill per run, beside node-timeout + 1 s.
// Run with `npm run bench:promotion` (`-- --node-timeouts 1000,3000 --runs 3`). Its servers live in a
// temporary directory and are stopped by PID at the end.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { commandLineValue, freePort, killAllChildrenNow, stopAllChildren, track } from './support.mjs';

function readOptions() {
  return {
    nodeTimeouts: commandLineValue('--node-timeouts', '1000,3000').split(',').map(Number),
    runs: Number(commandLineValue('--runs', '3')),
  };
}

/** Resolves with the command's stdout once it exits with 0. */
function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}: ${out}`))));
  });
}

async function until(check, timeoutMs, what) {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** One cluster, one kill: ms from the SIGKILL to the replica answering ROLE `master`. */
async function promotionMs(nodeTimeoutMs, dir) {
  const ports = [];
  const busPorts = [];
  for (let i = 0; i < 6; i++) {
    ports.push(await freePort());
    busPorts.push(await freePort());
  }
  const servers = ports.map((port, i) =>
    track(
      spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--cluster-port',
          String(busPorts[i]),
          '--cluster-enabled',
          'yes',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--bind',
          '127.0.0.1',
        ],
        { stdio: 'ignore' },
      ),
      `redis-server :${port}`,
    ),
  );
  // Errors are the point here (a killed server): each client's are silenced, its commands still fail.
  const clients = ports.map((port) => {
    const client = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    return client;
  });
  try {
    await until(
      async () => (await Promise.all(clients.map((c) => c.ping()))).every((r) => r === 'PONG'),
      10_000,
      'the servers',
    );
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    const info = async (client, section) => client.info(section);
    await until(
      async () =>
        (await Promise.all(clients.map((c) => c.cluster('INFO')))).every((i) => i.includes('cluster_state:ok')),
      20_000,
      'cluster_state:ok',
    );
    await until(
      async () =>
        (await Promise.all(clients.map((c) => info(c, 'replication')))).filter((i) =>
          i.includes('master_link_status:up'),
        ).length === 3,
      20_000,
      'three replicas in sync',
    );
    await sleep(1000);
    const victim = clients[0];
    const victimId = await victim.cluster('MYID');
    const nodes = (await clients[1].cluster('NODES'))
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const replicaPort = Number(
      nodes
        .find((fields) => fields[3] === victimId)[1]
        .split(':')[1]
        .split('@')[0],
    );
    const replica = clients[ports.indexOf(replicaPort)];
    await replica.connect().catch(() => undefined);
    const killedAt = performance.now();
    servers[0].kill('SIGKILL');
    for (;;) {
      const role = await replica.role().catch(() => []);
      if (role[0] === 'master') return performance.now() - killedAt;
      if (performance.now() - killedAt > 10 * nodeTimeoutMs + 10_000) throw new Error('the replica was never promoted');
      await sleep(10);
    }
  } finally {
    clients.forEach((client) => client.disconnect());
    await stopAllChildren();
  }
}

async function main() {
  const { nodeTimeouts, runs } = readOptions();
  const dir = await mkdtemp(join(os.tmpdir(), 'sluice-promotion-'));
  const rows = [];
  try {
    for (const nodeTimeoutMs of nodeTimeouts) {
      for (let i = 0; i < runs; i++) {
        const ms = await promotionMs(nodeTimeoutMs, await mkdtemp(join(dir, 'run-')));
        rows.push({ nodeTimeoutMs, ms });
        console.log(
          `node-timeout ${nodeTimeoutMs} ms: replica promoted ${ms.toFixed(0)} ms after the kill (node-timeout + 1 s: ${nodeTimeoutMs + 1000} ms)`,
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  for (const nodeTimeoutMs of nodeTimeouts) {
    const times = rows.filter((row) => row.nodeTimeoutMs === nodeTimeoutMs).map((row) => row.ms);
    console.log(
      `node-timeout ${nodeTimeoutMs} ms: ${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)} ms over ${times.length} runs`,
    );
  }
}

main().catch(async (error) => {
  console.error(error);
  killAllChildrenNow();
  process.exitCode = 1;
});
