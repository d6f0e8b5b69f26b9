import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { LATENCY_BOUNDS_MS } from '@sluice/core';
import { loadScript, scriptFiles, type ScriptName } from '../src/redis/scripts';
import { SHARED_REDIS_URL } from '../../../test/support/redis';

/** Every script the TypeScript calls; the type makes the list exact both ways. */
const CALLED: Record<ScriptName, true> = {
  decide_retry: true,
  decide_retries: true,
  record_outcomes: true,
  admit: true,
  take_rate_limit: true,
  release_lease: true,
  renew_lease: true,
  set_breaker: true,
  read_dependency: true,
  read_history: true,
  register_name: true,
  register_dependency: true,
  list_names: true,
  list_dependencies: true,
  keep_forced_listed: true,
  count_names: true,
  write_policy: true,
  read_policies: true,
  append_audit: true,
  read_audit: true,
  claim_idempotency_key: true,
  complete_idempotency_key: true,
  release_idempotency_key: true,
  read_idempotency_key: true,
  record_delivery_attempt: true,
  ack_delivery: true,
  list_dead_letters: true,
  redrive_dead_letter: true,
  purge_dead_letter: true,
  count_dead_letters: true,
  note_dead_letter_queue: true,
  list_dead_letter_queues: true,
  read_store_epoch: true,
  reassert_breaker: true,
};

const LUA_DIR = join(__dirname, '../src/redis/lua');

describe('the Lua scripts', () => {
  const scripts = scriptFiles();

  it('are the scripts the store calls, one file each, named <name>-<number of KEYS>.lua', () => {
    expect(scripts.map((script) => script.name).sort()).toEqual(Object.keys(CALLED).sort());
  });

  it.each(scriptFiles().map((script) => [script.file, script] as const))(
    '%s: the key count in its name is the KEYS its header lists and its body uses',
    (_file, script) => {
      const source = readFileSync(join(LUA_DIR, script.file), 'utf8');
      const header = source.slice(0, source.indexOf(']]'));
      const listed = [...header.matchAll(/^\s+KEYS\[(\d+)\]/gm)].map((match) => Number(match[1]));
      const used = [...source.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1]));
      // A `-N.lua` script lists its fixed keys, then the rest as `KEYS[<fixed> + i]`.
      const fixed = script.numberOfKeys ?? Number(/^\s+KEYS\[(\d+) \+ i\]/m.exec(header)?.[1]);
      expect(listed).toEqual(Array.from({ length: fixed }, (_, i) => i + 1));
      expect(Math.max(...used)).toBe(fixed);
      expect(header).toMatch(/Output:/);
    },
  );

  it('are loaded with every include and generated value written in', () => {
    for (const { name } of scripts) {
      const source = loadScript(name);
      expect(source).not.toMatch(/--- @include|\$\{/);
    }
    expect(loadScript('decide_retry')).toContain(`local LATENCY_BOUNDS = { ${LATENCY_BOUNDS_MS.join(', ')} }`);
    expect(loadScript('admit')).toMatch(/local CODE = \{ granted = 1, .*breaker_open = 4/);
  });

  it('reads the latency bounds from libs/core alone', () => {
    const include = readFileSync(join(LUA_DIR, 'includes/latency.lua'), 'utf8');
    expect(include).toContain('local LATENCY_BOUNDS = { ${LATENCY_BOUNDS_MS} }');
    expect(include).not.toMatch(/\b60000\b/);
  });

  it('compile on Redis, and the bounds Lua sees are LATENCY_BOUNDS_MS', async () => {
    const client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    try {
      for (const { name } of scripts)
        await expect(client.script('LOAD', loadScript(name))).resolves.toMatch(/^\w{40}$/);
      const [declaration] = loadScript('decide_retry').match(/^local LATENCY_BOUNDS = .*$/m) ?? [''];
      const bounds = await client.eval(`${declaration}\nreturn LATENCY_BOUNDS`, 0);
      expect(bounds).toEqual([...LATENCY_BOUNDS_MS]);
    } finally {
      client.disconnect();
    }
  });
});
