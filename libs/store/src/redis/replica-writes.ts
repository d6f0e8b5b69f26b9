import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { StoreUnavailableError } from '../errors';
import { disconnectRedisClient, duplicateRedisClient, waitUntilClientReady, type RedisClient } from './connection';
import { ScriptRunner } from './script-runner';
import type { ScriptArgument, ScriptName, ScriptReplies } from './scripts';

/**
 * Which writes wait for a replica: `replica` every one (a shard without a replica fails them),
 * `auto` those whose shard has a replica now, `none` no write.
 */
export type Durability = 'replica' | 'auto' | 'none';
export const DURABILITIES = ['replica', 'auto', 'none'] as const satisfies readonly Durability[];

/** How long a standalone server's count of replicas is trusted before it is asked again. */
const REPLICAS_CHECK_MS = 5000;

export interface ReplicatedReply<T> {
  reply: T;
  /** True when a replica acknowledged the write within the wait. */
  replicated: boolean;
}

/**
 * Script calls acknowledged once a replica holds their writes as well: the script, then `WAIT 1`
 * on the same connection (on a Cluster, the connection to the node that owns the key's slot).
 * WAIT blocks its connection, so these calls have one of their own (opened with the store unless
 * durability is `none`), and the decision path never waits behind a replica. The wait is bounded below the store timeout, so the
 * whole call answers within the timeout's reply deadline.
 */
export class ReplicaWrites {
  private runner?: ScriptRunner;
  private standaloneReplicas = 0;
  private replicasCheckedAt = -Infinity;
  /** How long WAIT waits for a replica's acknowledgement. */
  readonly waitMs: number;

  constructor(
    private readonly client: RedisClient,
    readonly durability: Durability,
    private readonly timeoutMs: number,
  ) {
    this.waitMs = Math.max(1, Math.floor(timeoutMs * 0.8));
    // Connected ahead of the first completion: a connection still connecting fails its calls.
    if (durability !== 'none') this.open();
    if (durability === 'auto' && !(client instanceof Cluster)) {
      client.on('ready', () => this.countReplicas(true));
      if (client.status === 'ready') this.countReplicas(true);
    }
  }

  /** Whether a write of `key` waits for a replica. */
  waitsFor(key: string): boolean {
    if (this.durability !== 'auto') return this.durability === 'replica';
    const { client } = this;
    if (client instanceof Cluster) return (client.slots[calculateSlot(key)]?.length ?? 0) > 1;
    this.countReplicas(false);
    return this.standaloneReplicas > 0;
  }

  /** Calls one script (KEYS then ARGV; the first key names the shard), then waits for a replica. */
  async run<N extends ScriptName>(script: N, ...args: ScriptArgument[]): Promise<ReplicatedReply<ScriptReplies[N]>> {
    const runner = this.open();
    const key = String(args[0]);
    const reply = await runner.run(script, ...args);
    const replicas = await runner.guard(this.waitOn(runner.client, key), key);
    return { reply, replicated: replicas >= 1 };
  }

  /** Resolves once the connection that waits for replicas is ready (at once when durability is `none`). */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    if (this.durability !== 'none') await waitUntilClientReady(this.open().client, timeoutMs);
  }

  close(): void {
    this.runner?.close();
    if (this.runner) disconnectRedisClient(this.runner.client);
  }

  private open(): ScriptRunner {
    if (this.runner === undefined) {
      const connection = duplicateRedisClient(this.client);
      // Its failures are the store's connection's too, which reports them; a call on it fails as the store's.
      connection.on('error', () => undefined);
      this.runner = new ScriptRunner(connection, this.timeoutMs);
    }
    return this.runner;
  }

  private waitOn(connection: RedisClient, key: string): Promise<number> {
    if (!(connection instanceof Cluster)) return connection.wait(1, this.waitMs);
    const owner = connection.slots[calculateSlot(key)]?.[0];
    const node = connection.nodes('master').find((candidate: Redis) => nodeKey(candidate) === owner);
    if (!node) return Promise.reject(new StoreUnavailableError(`no connection to the master of ${key}`));
    return node.wait(1, this.waitMs);
  }

  /** Asks a standalone server how many replicas it has (at most every REPLICAS_CHECK_MS). */
  private countReplicas(now: boolean): void {
    const at = performance.now();
    if (!now && at - this.replicasCheckedAt < REPLICAS_CHECK_MS) return;
    this.replicasCheckedAt = at;
    (this.client as Redis).info('replication').then(
      (info) => (this.standaloneReplicas = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0)),
      () => (this.replicasCheckedAt = -Infinity),
    );
  }
}

function nodeKey(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}
