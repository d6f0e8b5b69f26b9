import {
  createDependencyState,
  forgetUnusedNames,
  isForcedAt,
  pruneExpired,
  registerName,
  registeredNames,
} from '@sluice/core';
import type { RegistryStore } from '../roles/registry';
import type { MemoryContext } from './context';

/** The capped registries in memory (and a namespace's callers): registry key → name → last use (epoch ms). */
export function memoryRegistry(context: MemoryContext): RegistryStore {
  const { keys } = context;
  const registries = new Map<string, Map<string, number>>();
  /** A registry without the names unused for the retention; `forget` drops what they held. */
  const registry = (key: string, retentionMs: number, forget?: (name: string) => void) => {
    let names = registries.get(key);
    if (!names) {
      names = new Map();
      registries.set(key, names);
    }
    for (const name of forgetUnusedNames(names, retentionMs, context.now())) forget?.(name);
    return names;
  };
  /**
   * A namespace's dependencies; a forgotten dependency's state goes too, but for an operator's
   * forced state, which lasts until it lapses or is reset (as its Redis key does).
   */
  const dependencies = (namespace: string, retentionMs: number) =>
    registry(keys.namespace(namespace).dependencies, retentionMs, (dependency) => {
      const key = keys.dependency(namespace, dependency).breaker;
      const breaker = context.dependencies.get(key)?.breaker;
      if (breaker && isForcedAt(breaker, context.now()))
        context.dependencies.set(key, { ...createDependencyState(), breaker });
      else context.dependencies.delete(key);
    });
  return {
    async registerDependency(ref, { cap, retentionMs, by = 'caller' }) {
      const now = context.now();
      const registered = registerName(dependencies(ref.namespace, retentionMs), ref.dependency, cap, now);
      if (registered === 'refused') return 'refused';
      if (registered === 'new') {
        context.channels.publish(keys.namespace(ref.namespace).events, { type: 'dependency', dep: ref.dependency });
      }
      const callers = registry(keys.namespace(ref.namespace).callers, retentionMs);
      const called = callers.has(ref.dependency);
      if (by === 'caller') callers.set(ref.dependency, now);
      return called ? 'called' : 'uncalled';
    },

    async listDependencies(namespace, retentionMs) {
      const names = dependencies(namespace, retentionMs);
      const forced = context.forced.get(namespace);
      if (forced) pruneExpired(forced, context.now());
      return [...new Set([...registeredNames(names), ...(forced?.keys() ?? [])])].sort();
    },

    async countDependencies(namespace, retentionMs) {
      return dependencies(namespace, retentionMs).size;
    },

    async registerNamespace(namespace, registration) {
      const names = registry(keys.namespaces(), registration.retentionMs);
      return registerName(names, namespace, registration.cap, context.now()) !== 'refused';
    },

    async listNamespaces(retentionMs) {
      return registeredNames(registry(keys.namespaces(), retentionMs));
    },
  };
}
