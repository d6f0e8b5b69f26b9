import { execFile } from 'node:child_process';
import { findFreePorts } from './ports';
import { RedisServerProcess, redisCli } from './redis-server';
import { waitUntil } from './time';

export interface RedisClusterOptions {
  /** Bound on startup: nodes answering, `--cluster create`, and every node reporting `cluster_state:ok`. */
  startTimeoutMs?: number;
  /** Replicas of each master (`--cluster-replicas`); none by default. */
  replicasPerMaster?: number;
  /** Directives for every node, over the defaults (cluster-node-timeout 2000). */
  config?: Record<string, string>;
}

const MASTERS = 3;
const DEFAULT_START_TIMEOUT_MS = 20_000;

/**
 * A private 3-master Redis Cluster on 127.0.0.1 (with `replicasPerMaster` replicas of each), each
 * node a RedisServerProcess (so the same cleanup safety nets apply).
 */
export class RedisClusterProcess {
  /** The node processes, in the order of `nodes`. */
  readonly servers: RedisServerProcess[] = [];

  constructor(private readonly options: RedisClusterOptions = {}) {}

  /** Creates a cluster and starts it. */
  static async start(options?: RedisClusterOptions): Promise<RedisClusterProcess> {
    return new RedisClusterProcess(options).start();
  }

  /** `127.0.0.1:<port>` of every node. */
  get nodes(): string[] {
    return this.servers.map((server) => `127.0.0.1:${server.port}`);
  }

  /** Starts the nodes, joins them into a cluster and waits until every node reports it healthy. */
  async start(): Promise<this> {
    if (this.servers.length > 0) throw new Error('RedisClusterProcess already started');
    const timeoutMs = this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    // The cluster bus defaults to port+10000, which can exceed 65535 for ephemeral ports,
    // so every node also gets an explicitly chosen free bus port.
    const replicas = this.options.replicasPerMaster ?? 0;
    const count = MASTERS * (1 + replicas);
    const ports = await findFreePorts(2 * count);
    for (let i = 0; i < count; i++) {
      const port = ports[i];
      const config = {
        'cluster-node-timeout': '2000',
        ...this.options.config,
        'cluster-enabled': 'yes',
        'cluster-config-file': `nodes-${port}.conf`,
        'cluster-port': String(ports[count + i]),
      };
      this.servers.push(new RedisServerProcess({ port, config, startTimeoutMs: timeoutMs }));
    }
    try {
      await Promise.all(this.servers.map((server) => server.start()));
      await createCluster(this.nodes, replicas, timeoutMs);
      let lastInfo = '';
      await waitUntil(
        async () => {
          for (const server of this.servers) {
            lastInfo = await redisCli(server.port, ['CLUSTER', 'INFO']).catch((err: Error) => err.message);
            if (!isHealthy(lastInfo, count)) return false;
          }
          return true;
        },
        timeoutMs,
        () => `Redis Cluster ${this.nodes.join(',')} did not reach cluster_state:ok; last CLUSTER INFO:\n${lastInfo}`,
      );
      // cluster_state:ok on every node is not yet one view: until the gossip settles, a node's slot
      // map can miss a master (a client refreshing its map from it would drop that master's
      // connection). Wait until every node tells the same masters, slots and replicas.
      let views: string[] = [];
      await waitUntil(
        async () => {
          views = await Promise.all(
            this.servers.map((server) =>
              redisCli(server.port, ['CLUSTER', 'NODES']).then(topologyOf, (err: Error) => err.message),
            ),
          );
          return views.every((view) => view === views[0] && !view.includes('fail'));
        },
        timeoutMs,
        () => `Redis Cluster ${this.nodes.join(',')} did not settle on one view:\n${views.join('\n---\n')}`,
      );
      return this;
    } catch (err) {
      await this.cleanup();
      throw err;
    }
  }

  /** Kills every node and removes their temp dirs. Idempotent. */
  async cleanup(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.cleanup()));
  }
}

/** A node's CLUSTER NODES without what differs by the node asked: each node's id, role, master and slots, sorted. */
function topologyOf(nodes: string): string {
  return nodes
    .trim()
    .split('\n')
    .map((line) => {
      const [id, , flags, master, , , , , ...slots] = line.trim().split(' ');
      const role = flags.replace('myself,', '');
      return `${id} ${role} ${master} ${slots.join(',')}`;
    })
    .sort()
    .join('\n');
}

function isHealthy(info: string, nodes: number): boolean {
  return (
    info.includes('cluster_state:ok') &&
    info.includes('cluster_slots_assigned:16384') &&
    info.includes(`cluster_known_nodes:${nodes}`)
  );
}

function createCluster(nodes: string[], replicas: number, timeoutMs: number): Promise<void> {
  const args = ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes'];
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: timeoutMs }, (err, stdout, stderr) =>
      err ? reject(new Error(`redis-cli --cluster create failed: ${err.message}\n${stdout}${stderr}`)) : resolve(),
    );
  });
}
