import { writeVersionedDocument } from '@sluice/core';
import type { PolicyStore, StoredPolicy } from '../roles/policies';
import type { MemoryContext } from './context';

/** Versioned policy documents in memory: policies key → `<kind>:<name>` → document (null once deleted). */
export function memoryPolicies(context: MemoryContext): PolicyStore {
  const { keys } = context;
  const namespaces = new Map<string, Map<string, StoredPolicy>>();
  return {
    async readPolicies(namespace) {
      const policies = namespaces.get(keys.namespace(namespace).policies);
      if (!policies) return [];
      return [...policies.values()]
        .filter((stored) => stored.document !== null)
        .map((stored) => ({ ...stored, document: structuredClone(stored.document) }));
    },

    async writePolicy(namespace, ref, document, condition) {
      const namespaceKeys = keys.namespace(namespace);
      let policies = namespaces.get(namespaceKeys.policies);
      if (!policies) {
        policies = new Map();
        namespaces.set(namespaceKeys.policies, policies);
      }
      const field = `${ref.kind}:${ref.name}`;
      const outcome = writeVersionedDocument(policies.get(field), document, condition);
      if (outcome.outcome !== 'written') return outcome;
      policies.set(field, {
        ...ref,
        version: outcome.version,
        document: document === null ? null : structuredClone(document),
      });
      context.channels.publish(namespaceKeys.events, { type: 'policy', kind: ref.kind, name: ref.name });
      return outcome;
    },
  };
}
