import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientContext, Result } from 'ioredis';
import { HISTORY_STEPS, HISTORY_STEP_SECONDS, LATENCY_BOUNDS_MS, MAX_REPORTERS } from '@sluice/core';
import type { RedisClient } from './connection';
import { expandIncludes } from './lua-includes';
import { luaCodeTable } from './script-codes';

export type ScriptArgument = string | number;
/** A flat reply of numbers and strings, decoded by the script's caller. */
type FlatReply = Array<string | number>;

/**
 * What each script under ./lua answers (the Output of its header), by name: the types of the
 * script commands on every client (the ioredis augmentation below).
 */
export interface ScriptReplies {
  decide_retry: FlatReply;
  decide_retries: FlatReply;
  record_outcomes: FlatReply;
  admit: FlatReply;
  take_rate_limit: number[];
  release_lease: number[];
  renew_lease: number[];
  set_breaker: FlatReply;
  read_dependency: FlatReply;
  read_history: string[];
  register_name: number;
  register_dependency: number;
  list_names: string[];
  list_dependencies: string[];
  keep_forced_listed: number;
  count_names: number;
  write_policy: number[];
  read_policies: FlatReply;
  append_audit: number;
  read_audit: string[];
  claim_idempotency_key: [code: number, value: number | string | undefined, token: string, recovered: number];
  complete_idempotency_key: number;
  release_idempotency_key: number;
  read_idempotency_key: [state: 'in_flight' | 'completed', number, number, number, number] | [];
  record_delivery_attempt: number[];
  ack_delivery: number;
  list_dead_letters: [depth: number, next: string, ...entries: string[]];
  redrive_dead_letter: string | null;
  purge_dead_letter: number;
  count_dead_letters: number;
  note_dead_letter_queue: number;
  list_dead_letter_queues: [next: string, ...listed: Array<string | number>];
  read_store_epoch: [epoch: string, created: number];
  reassert_breaker: FlatReply;
}

export type ScriptName = keyof ScriptReplies;

/** One command per script: its KEYS, then its ARGV (the key count comes from the file name). */
export type ScriptCommands<Context extends ClientContext> = {
  [N in ScriptName]: (...keysThenArgs: ScriptArgument[]) => Result<ScriptReplies[N], Context>;
};

declare module 'ioredis' {
  // The scripts RedisStore defines (defineScripts) are commands of every client.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface RedisCommander<Context> extends ScriptCommands<Context> {}
}

const LUA_DIR = join(__dirname, 'lua');
/**
 * `<name>-<number of KEYS>.lua`, as bullmq names its commands: the key count lives in the file name;
 * `<name>-N.lua` takes a number of KEYS its caller gives (ScriptRunner.runWithKeys).
 */
const SCRIPT_FILE = /^([a-z_]+)-(\d+|N)\.lua$/;
/** `${NAME}` in a Lua source: a value generated from its one source in TypeScript. */
const GENERATED = /\$\{([A-Z_]+)\}/g;
const GENERATORS: Record<string, () => string> = {
  LATENCY_BOUNDS_MS: () => LATENCY_BOUNDS_MS.join(', '),
  MAX_REPORTERS: () => String(MAX_REPORTERS),
  HISTORY_STEP_SECONDS: () => String(HISTORY_STEP_SECONDS),
  HISTORY_STEPS: () => String(HISTORY_STEPS),
  SCRIPT_CODES: luaCodeTable,
};

export interface ScriptFile {
  name: string;
  /** undefined: the caller gives the key count (a `-N.lua` file). */
  numberOfKeys: number | undefined;
  file: string;
}

/** The scripts under ./lua, each with the number of KEYS its file name gives. */
export function scriptFiles(): ScriptFile[] {
  return readdirSync(LUA_DIR).flatMap((file) => {
    const match = SCRIPT_FILE.exec(file);
    return match ? [{ name: match[1], numberOfKeys: match[2] === 'N' ? undefined : Number(match[2]), file }] : [];
  });
}

/**
 * A script's source as Redis runs it: its `--- @include "name"` lines replaced by
 * ./lua/includes/name.lua, recursively (lua-includes.ts), and each `${NAME}` by the value generated for it (LATENCY_BOUNDS_MS of
 * libs/core, the ScriptCode table), so the Lua and the TypeScript cannot drift.
 */
export function loadScript(name: string): string {
  const script = scriptFiles().find((candidate) => candidate.name === name);
  if (!script) throw new Error(`No Lua script ${name}-<keys>.lua in ${LUA_DIR}`);
  return expandScript(readFileSync(join(LUA_DIR, script.file), 'utf8'), script.file);
}

/** A Lua source (`file` names it in errors) with its includes and generated values written in, as loadScript does. */
export function expandScript(source: string, file: string): string {
  const included = expandIncludes(source, file, readInclude);
  return included.replace(GENERATED, (_placeholder, value: string) => {
    const generate = GENERATORS[value];
    if (!generate) throw new Error(`${file}: nothing generates \${${value}}`);
    return generate();
  });
}

/** Defines every script as a command of `client` (EVALSHA, reloaded on NOSCRIPT). */
export function defineScripts(client: RedisClient): void {
  for (const { name, numberOfKeys } of scriptFiles()) {
    client.defineCommand(name, { lua: loadScript(name), numberOfKeys });
  }
}

function readInclude(name: string): string | undefined {
  const path = join(LUA_DIR, 'includes', `${name}.lua`);
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}
