import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection';
import { ReplyDeadline } from './reply-deadline';
import {
  defineScripts,
  type ScriptArgument,
  type ScriptCommands,
  type ScriptName,
  type ScriptReplies,
} from './scripts';

/**
 * Runs the Lua scripts on one client, each call bounded by the reply deadline of the connection
 * its first key travels on. The one way RedisStore's parts reach Redis.
 */
export class ScriptRunner {
  private readonly deadline: ReplyDeadline;

  constructor(
    readonly client: RedisClient,
    timeoutMs: number,
  ) {
    this.deadline = new ReplyDeadline(timeoutMs);
    defineScripts(client);
  }

  /** Calls one script with its KEYS then its ARGV; the first key names the connection timed. */
  run<N extends ScriptName>(script: N, ...args: ScriptArgument[]): Promise<ScriptReplies[N]> {
    const commands: ScriptCommands<{ type: 'default' }> = this.client;
    return this.guard(commands[script](...args), String(args[0]));
  }

  /** Bounds one operation by the store timeout and turns any failure into StoreUnavailableError. */
  guard<T>(operation: Promise<T>, firstKey?: string): Promise<T> {
    return this.deadline.guard(operation, firstKey === undefined ? '' : this.connectionOf(firstKey));
  }

  /** The connection a key's commands travel on: the server, or the Cluster node owning its slot. */
  private connectionOf(key: string): string {
    const { client } = this;
    return client instanceof Cluster ? (client.slots[calculateSlot(key)]?.[0] ?? '') : '';
  }
}
