/** `--- @include "name"`, a line of its own: ./lua/includes/name.lua written in its place. */
const INCLUDE = /^--- @include "([a-z_]+)"$/gm;

/** An include's source by name, undefined when there is none. */
export type IncludeReader = (name: string) => string | undefined;

/**
 * `source` with every `--- @include "name"` line replaced by that include, expanded the same way,
 * so each file lists only the includes it uses itself. An include is written once, at its first
 * line, after the includes it needs: a later line for it, in any file, is dropped. An include that
 * reaches itself again is an error naming the chain (`a -> b -> a`), and so is a missing one.
 *
 * @example
 * expandIncludes('--- @include "retry_ask"\nreturn 1', 'decide_retry-4.lua', readInclude)
 */
export function expandIncludes(source: string, file: string, readInclude: IncludeReader): string {
  const written = new Set<string>();
  const expand = (text: string, chain: readonly string[]): string =>
    text.replace(INCLUDE, (_line, name: string) => {
      if (chain.includes(name)) throw new Error(`${file}: Lua include cycle ${[...chain, name].join(' -> ')}`);
      if (written.has(name)) return '';
      const included = readInclude(name);
      if (included === undefined) {
        throw new Error(`${file}: no include "${name}" (includes/${name}.lua), included by ${chain.at(-1) ?? file}`);
      }
      const expanded = expand(included, [...chain, name]);
      written.add(name);
      return expanded;
    });
  return expand(source, []);
}
