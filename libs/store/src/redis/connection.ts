import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { StoreUnavailableError } from '../errors';

export type RedisClient = Redis | Cluster;

export interface RedisConnectionOptions {
  /** `redis://` URL of a standalone server. */
  url?: string;
  /** `host:port` seeds of a Redis Cluster; takes precedence over `url`. */
  clusterNodes?: string[];
  /**
   * How long one command may take: bounds connecting and slot refreshes here; the store times
   * each reply itself (reply-deadline.ts), so ioredis sets no command timeout of its own.
   */
  commandTimeoutMs: number;
}

/**
 * Client settings for a decision path: commands fail at once while disconnected (no offline
 * queue, no retry of a sent command), and reconnection is retried quickly and forever, so answers
 * resume without a restart. No `commandTimeout`: it is a timer raced against the reply, which an
 * event-loop stall fires while the reply sits unread in the socket; RedisStore times replies.
 */
function decisionPathOptions(commandTimeoutMs: number): RedisOptions {
  return {
    protocol: 2,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: Math.max(1000, commandTimeoutMs),
    retryStrategy: (attempt) => Math.min(50 * attempt, 500),
    // Each command is written when it is made, not on the next tick with the others: at 32
    // concurrent decisions the standalone coordinator answered 25–60 % more per second
    // (bench:decisions). The socket still batches what queues behind a pending write.
    enableAutoPipelining: false,
    lazyConnect: false,
  };
}

/**
 * ioredis opens a Cluster node's connection on its first command, and without an offline queue a
 * command sent to it while it is still connecting fails at once ("Connection is closed"). So each
 * master's connection is opened as soon as the client learns of the node, not by the first call
 * that needs it (replicas, which serve no call here, stay unopened).
 */
function connectNodesEagerly(cluster: Cluster): void {
  cluster.on('+node', (node: Redis) => {
    // Its failures are the client's to report.
    if (node.status === 'wait' && !node.options.readOnly) node.connect().catch(() => undefined);
  });
}

export function createRedisClient(options: RedisConnectionOptions): RedisClient {
  const redisOptions = decisionPathOptions(options.commandTimeoutMs);
  if (options.clusterNodes && options.clusterNodes.length > 0) {
    const cluster = new Cluster(clusterSeeds(options.clusterNodes), {
      redisOptions,
      enableOfflineQueue: false,
      // Commands for one node go out together (not measured against the standalone setting above).
      enableAutoPipelining: true,
      clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 500),
      slotsRefreshTimeout: Math.max(1000, options.commandTimeoutMs),
      ...clusterRedirections(options.commandTimeoutMs),
    });
    connectNodesEagerly(cluster);
    return cluster;
  }
  if (!options.url) throw new Error('A Redis URL or cluster nodes are required');
  return new Redis(options.url, redisOptions);
}

/**
 * A second client on the same servers with the same settings, for calls that must not queue behind
 * the first one's (WAIT blocks its connection). On a Cluster its masters are opened eagerly too.
 */
export function duplicateRedisClient(client: RedisClient): RedisClient {
  if (!(client instanceof Cluster)) return client.duplicate();
  const duplicate = client.duplicate();
  connectNodesEagerly(duplicate);
  return duplicate;
}

/**
 * Resolves once the client is ready (on a Cluster, with a ready connection to every master, so no
 * call meets one still opening); rejects with StoreUnavailableError after `timeoutMs`.
 */
export async function waitUntilClientReady(client: RedisClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await clientReady(client, timeoutMs);
  if (!(client instanceof Cluster)) return;
  while (!client.nodes('master').every((node) => node.status === 'ready')) {
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError(`Redis Cluster masters were not all ready within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function clientReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new StoreUnavailableError(`Redis was not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('ready', onReady);
  });
}

/**
 * Closes a client for good. A Cluster client whose slot refresh is still under way at `disconnect()`
 * arms its refresh timer again when that refresh ends (ioredis), then refreshes an empty pool on
 * every tick, forever, and the process never exits: once the refresh under way has ended, its
 * timer is cleared again.
 */
export function disconnectRedisClient(client: RedisClient): void {
  client.disconnect();
  if (client instanceof Cluster) client.refreshSlotsCache(() => client.disconnect());
}

/**
 * How often a Cluster client reads the slot map anew, so a promoted replica serves its slots within
 * this: a dead master answers nothing (no MOVED to follow), so the map is all that tells. One
 * CLUSTER SLOTS per instance this often costs a seed node little.
 */
export const CLUSTER_SLOTS_REFRESH_MS = 250;

/**
 * What a Cluster client does with a command Redis did not run, so no retry outlives the reply
 * deadline (a call already answered 503 must not change state afterwards):
 * - CLUSTERDOWN (the slot has no master: a failover is under way) and a closed connection (the
 *   command may or may not have run on a master that died) are never sent again: the call fails
 *   at once, and the caller asks again with the same id;
 * - MOVED and ASK (the command was not run; another node owns the slot) are followed at once, and
 *   TRYAGAIN (a slot being migrated) after a tenth of the timeout, at most three times in all, so
 *   every resend is written well within the timeout.
 * The slot map is refreshed every CLUSTER_SLOTS_REFRESH_MS (one CLUSTER SLOTS per instance), so the
 * slots of a failed master are served again within a fraction of a second of its replica's promotion.
 */
export function clusterRedirections(commandTimeoutMs: number) {
  return {
    retryDelayOnClusterDown: 0,
    retryDelayOnFailover: 0,
    retryDelayOnMoved: 0,
    retryDelayOnTryAgain: Math.max(1, Math.floor(commandTimeoutMs / 10)),
    maxRedirections: 3,
    slotsRefreshInterval: CLUSTER_SLOTS_REFRESH_MS,
  } as const;
}

/**
 * A connection for sharded pub/sub (SSUBSCRIBE): it queues subscriptions until connected; on
 * Cluster it follows each channel's shard. After a reconnect, RedisEventSubscriber subscribes
 * again itself (confirmed, a refusal asked again): ioredis's own resubscription is off on a
 * standalone connection, as a refusal of it would be an unhandled rejection.
 */
export function createRedisSubscriber(options: RedisConnectionOptions): RedisClient {
  const redisOptions: RedisOptions = {
    protocol: 2,
    connectTimeout: Math.max(1000, options.commandTimeoutMs),
    retryStrategy: (attempt) => Math.min(50 * attempt, 500),
    maxRetriesPerRequest: null,
  };
  if (options.clusterNodes && options.clusterNodes.length > 0) {
    return new Cluster(clusterSeeds(options.clusterNodes), {
      redisOptions,
      shardedSubscribers: true,
      clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 500),
    });
  }
  if (!options.url) throw new Error('A Redis URL or cluster nodes are required');
  return new Redis(options.url, { ...redisOptions, autoResubscribe: false });
}

function clusterSeeds(nodes: string[]): Array<{ host: string; port: number }> {
  return nodes.map((node) => {
    const [host, port] = splitHostPort(node);
    return { host, port };
  });
}

export function splitHostPort(node: string): [string, number] {
  const separator = node.lastIndexOf(':');
  const host = node.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(node.slice(separator + 1));
  if (separator <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`"${node}" is not host:port`);
  }
  return [host, port];
}
