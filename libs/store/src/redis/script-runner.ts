import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './connection';
import { ReplyDeadline } from './reply-deadline';
import {
  defineScripts,
  type ScriptArgument,
  type ScriptCommands,
  type ScriptName,
  type ScriptReplies,
} from './scripts';

/** The probe connection's name in CLIENT LIST. */
export const PROBE_CONNECTION_NAME = 'sluice-probe';

/**
 * Runs the Lua scripts on one client, each call bounded by the reply deadline of the connection
 * its first key travels on. The one way RedisStore's parts reach Redis.
 */
export class ScriptRunner {
  private readonly deadline: ReplyDeadline;
  /**
   * A connection of its own for PING, asked when the scripts' connection goes silent (standalone
   * only: on a Cluster a silent node's calls fail on its silence). Opened with the first call, so
   * that when a burst makes the scripts' connection look silent, the probe is one round trip on a
   * connection already open, not a connect and a ready check inside the timeout. Like the
   * scripts' connection it queues nothing while disconnected: a probe then fails at once.
   */
  private prober?: Redis;

  constructor(
    readonly client: RedisClient,
    timeoutMs: number,
  ) {
    const probe = client instanceof Cluster ? undefined : () => this.prober?.ping();
    this.deadline = new ReplyDeadline(timeoutMs, undefined, probe);
    defineScripts(client);
  }

  /** Closes the probe connection (the client is its owner's to close). */
  close(): void {
    this.prober?.disconnect();
  }

  /** Calls one script with its KEYS then its ARGV; the first key names the connection timed. */
  run<N extends ScriptName>(script: N, ...args: ScriptArgument[]): Promise<ScriptReplies[N]> {
    const commands: ScriptCommands<{ type: 'default' }> = this.client;
    return this.guard(commands[script](...args), String(args[0]));
  }

  /** Calls a script that takes any number of KEYS (`<name>-N.lua`): the key count, the keys, then ARGV. */
  runWithKeys<N extends ScriptName>(
    script: N,
    keys: readonly string[],
    args: readonly ScriptArgument[],
  ): Promise<ScriptReplies[N]> {
    const commands: ScriptCommands<{ type: 'default' }> = this.client;
    return this.guard(commands[script](keys.length, ...keys, ...args), keys[0]);
  }

  /** Bounds one operation by the store timeout and turns any failure into StoreUnavailableError. */
  guard<T>(operation: Promise<T>, firstKey?: string): Promise<T> {
    const { client } = this;
    if (this.prober === undefined && !(client instanceof Cluster)) {
      this.prober = client.duplicate({
        enableAutoPipelining: false,
        enableOfflineQueue: false,
        connectionName: PROBE_CONNECTION_NAME,
      });
      // Its failures are the scripts' connection's too, which reports them; a failed PING is the answer.
      this.prober.on('error', () => undefined);
    }
    return this.deadline.guard(operation, firstKey === undefined ? '' : this.connectionOf(firstKey));
  }

  /** The connection a key's commands travel on: the server, or the Cluster node owning its slot. */
  private connectionOf(key: string): string {
    const { client } = this;
    return client instanceof Cluster ? (client.slots[calculateSlot(key)]?.[0] ?? '') : '';
  }
}
