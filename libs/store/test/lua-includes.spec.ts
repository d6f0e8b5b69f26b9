import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expandIncludes, type IncludeReader } from '../src/redis/lua-includes';

const readerOf =
  (includes: Record<string, string>): IncludeReader =>
  (name) =>
    includes[name];

describe('Lua includes', () => {
  it('expands an include of an include, its own includes before it', () => {
    const read = readerOf({
      clock: 'local function now() end',
      window: '--- @include "clock"\nlocal function windowSum() now() end',
    });
    expect(expandIncludes('--- @include "window"\nreturn windowSum()', 's-1.lua', read)).toBe(
      'local function now() end\nlocal function windowSum() now() end\nreturn windowSum()',
    );
  });

  it('writes an include once, at its first line, however many files ask for it', () => {
    const read = readerOf({
      clock: 'CLOCK',
      window: '--- @include "clock"\nWINDOW',
      budget: '--- @include "clock"\n--- @include "window"\nBUDGET',
    });
    const expanded = expandIncludes(
      '--- @include "budget"\n--- @include "window"\n--- @include "clock"\nBODY',
      's-1.lua',
      read,
    );
    expect(expanded.split('\n').filter(Boolean)).toEqual(['CLOCK', 'WINDOW', 'BUDGET', 'BODY']);
  });

  it('refuses a cycle, naming the chain', () => {
    const read = readerOf({ a: '--- @include "b"', b: '--- @include "c"', c: '--- @include "a"' });
    expect(() => expandIncludes('--- @include "a"', 's-1.lua', read)).toThrow(
      's-1.lua: Lua include cycle a -> b -> c -> a',
    );
  });

  it('refuses an include that is not there, naming it and who asked for it', () => {
    const read = readerOf({ a: '--- @include "nowhere"' });
    expect(() => expandIncludes('--- @include "a"', 's-1.lua', read)).toThrow(
      's-1.lua: no include "nowhere" (includes/nowhere.lua), included by a',
    );
  });

  it('leaves a source without includes as it is', () => {
    expect(expandIncludes('return KEYS[1]', 's-1.lua', readerOf({}))).toBe('return KEYS[1]');
  });

  it('takes keys as parameters in every include: none reads its caller\u2019s KEYS', () => {
    const dir = join(__dirname, '../src/redis/lua/includes');
    const reading = readdirSync(dir).filter((file) => {
      const code = readFileSync(join(dir, file), 'utf8')
        .replace(/--\[\[[\s\S]*?\]\]/g, '')
        .replace(/--.*$/gm, '');
      return /\bKEYS\b/.test(code);
    });
    expect(reading).toEqual([]);
  });
});
