import type { SluiceKeys } from '../keys';
import type { DependencyRegistration, RegistryStore } from '../roles/registry';
import type { ScriptRunner } from './script-runner';

/** The capped registries of dependencies and namespaces: register_name-1.lua and list_names-1.lua. */
export function redisRegistry(scripts: ScriptRunner, keys: SluiceKeys): RegistryStore {
  const register = async (registry: string, name: string, registration: DependencyRegistration, channel: string) =>
    Number(await scripts.run('register_name', registry, name, registration.cap, registration.retentionMs, channel)) ===
    1;
  const list = async (registry: string, retentionMs: number) =>
    (await scripts.run('list_names', registry, retentionMs)).map(String);
  return {
    async registerDependency(ref, registration) {
      const namespace = keys.namespace(ref.namespace);
      return register(namespace.dependencies, ref.dependency, registration, namespace.events);
    },

    async listDependencies(namespace, retentionMs) {
      const { dependencies, forced } = keys.namespace(namespace);
      return (await scripts.run('list_dependencies', dependencies, forced, retentionMs)).map(String);
    },

    async registerNamespace(namespace, registration) {
      return register(keys.namespaces(), namespace, registration, '');
    },

    async listNamespaces(retentionMs) {
      return list(keys.namespaces(), retentionMs);
    },
  };
}
