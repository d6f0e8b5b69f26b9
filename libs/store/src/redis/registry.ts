import type { SluiceKeys } from '../keys';
import type { DependencyRegistered, DependencyRegistration, RegistryStore } from '../roles/registry';
import type { ScriptRunner } from './script-runner';

/** register_dependency-2.lua's answers. */
const REGISTERED: Record<number, DependencyRegistered> = { 0: 'refused', 1: 'called', 2: 'uncalled' };

/**
 * The capped registries: dependencies with register_dependency-2.lua, namespaces with
 * register_name-1.lua, both listed with list_names-1.lua.
 */
export function redisRegistry(scripts: ScriptRunner, keys: SluiceKeys): RegistryStore {
  const list = async (registry: string, retentionMs: number) =>
    (await scripts.run('list_names', registry, retentionMs)).map(String);
  return {
    async registerDependency(ref, registration) {
      const namespace = keys.namespace(ref.namespace);
      const { cap, retentionMs, by = 'caller' } = registration;
      const answer = await scripts.run(
        'register_dependency',
        namespace.dependencies,
        namespace.callers,
        ref.dependency,
        cap,
        retentionMs,
        namespace.events,
        by,
      );
      return REGISTERED[Number(answer)];
    },

    async listDependencies(namespace, retentionMs) {
      const { dependencies, forced } = keys.namespace(namespace);
      return (await scripts.run('list_dependencies', dependencies, forced, retentionMs)).map(String);
    },

    async countDependencies(namespace, retentionMs) {
      return Number(await scripts.run('count_names', keys.namespace(namespace).dependencies, retentionMs));
    },

    async registerNamespace(namespace, registration: DependencyRegistration) {
      const answer = await scripts.run(
        'register_name',
        keys.namespaces(),
        namespace,
        registration.cap,
        registration.retentionMs,
        '',
      );
      return Number(answer) === 1;
    },

    async listNamespaces(retentionMs) {
      return list(keys.namespaces(), retentionMs);
    },
  };
}
