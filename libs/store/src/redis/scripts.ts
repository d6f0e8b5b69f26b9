import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The atomic operations, one Lua file each under ./lua, with the number of KEYS they take. */
export const SCRIPTS = {
  decide_retry: { numberOfKeys: 4 },
  record_outcomes: { numberOfKeys: 7 },
  admit: { numberOfKeys: 5 },
  take_rate_limit: { numberOfKeys: 2 },
  release_lease: { numberOfKeys: 1 },
  renew_lease: { numberOfKeys: 1 },
  set_breaker: { numberOfKeys: 4 },
  read_dependency: { numberOfKeys: 4 },
  register_name: { numberOfKeys: 1 },
  list_names: { numberOfKeys: 1 },
  write_policy: { numberOfKeys: 1 },
  read_policies: { numberOfKeys: 1 },
  append_audit: { numberOfKeys: 1 },
  read_audit: { numberOfKeys: 1 },
  claim_idempotency_key: { numberOfKeys: 1 },
  complete_idempotency_key: { numberOfKeys: 1 },
  release_idempotency_key: { numberOfKeys: 1 },
  read_idempotency_key: { numberOfKeys: 1 },
  record_delivery_attempt: { numberOfKeys: 3 },
  ack_delivery: { numberOfKeys: 1 },
  list_dead_letters: { numberOfKeys: 2 },
  redrive_dead_letter: { numberOfKeys: 3 },
  purge_dead_letter: { numberOfKeys: 3 },
  count_dead_letters: { numberOfKeys: 2 },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

const LUA_DIR = join(__dirname, 'lua');
const INCLUDE = /^--- @include "([a-z_]+)"$/gm;

/** A script's source with its `--- @include "name"` lines replaced by ./lua/includes/name.lua. */
export function loadScript(name: ScriptName): string {
  const source = readFileSync(join(LUA_DIR, `${name}.lua`), 'utf8');
  return source.replace(INCLUDE, (_line, include: string) =>
    readFileSync(join(LUA_DIR, 'includes', `${include}.lua`), 'utf8'),
  );
}
