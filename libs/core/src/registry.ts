/**
 * A capped registry of names by last use (the dependencies of a namespace, the namespaces of a
 * deployment), as pure functions over a Map of name → last use (epoch ms). The Lua twins are
 * register_name-1.lua and list_names-1.lua.
 */

/** A capped registry's terms. */
export interface NameRegistration {
  /** Most distinct names the registry may hold. */
  cap: number;
  /** A name unused this long is forgotten. */
  retentionMs: number;
}

/** Forgets the names unused for `retentionMs`; returns them. */
export function forgetUnusedNames(registry: Map<string, number>, retentionMs: number, now: number): string[] {
  const forgotten: string[] = [];
  for (const [name, lastUse] of registry) {
    if (lastUse > now - retentionMs) continue;
    registry.delete(name);
    forgotten.push(name);
  }
  return forgotten;
}

/** Registers a use of `name`: `new` or `known`, or `refused` for a new name past the cap. Prune first. */
export function registerName(
  registry: Map<string, number>,
  name: string,
  cap: number,
  now: number,
): 'new' | 'known' | 'refused' {
  const known = registry.has(name);
  if (!known && registry.size >= cap) return 'refused';
  registry.set(name, now);
  return known ? 'known' : 'new';
}

/** The registered names, sorted. */
export function registeredNames(registry: Map<string, number>): string[] {
  return [...registry.keys()].sort();
}
