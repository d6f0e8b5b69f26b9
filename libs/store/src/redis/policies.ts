import type { SluiceKeys } from '../keys';
import type { PolicyKind, PolicyStore, StoredPolicy } from '../roles/policies';
import { scriptOutcome } from './script-codes';
import type { ScriptRunner } from './script-runner';

/** Versioned policy documents: read_policies-1.lua and write_policy-1.lua. */
export function redisPolicies(scripts: ScriptRunner, keys: SluiceKeys): PolicyStore {
  return {
    async readPolicies(namespace) {
      const reply = await scripts.run('read_policies', keys.namespace(namespace).policies);
      const policies: StoredPolicy[] = [];
      for (let i = 0; i + 3 < reply.length; i += 4) {
        policies.push({
          kind: reply[i] as PolicyKind,
          name: String(reply[i + 1]),
          version: Number(reply[i + 2]),
          document: JSON.parse(String(reply[i + 3])),
        });
      }
      return policies;
    },

    async writePolicy(namespace, ref, document, condition) {
      const namespaceKeys = keys.namespace(namespace);
      const [code, version] = await scripts.run(
        'write_policy',
        namespaceKeys.policies,
        ref.kind,
        ref.name,
        document === null ? '' : JSON.stringify(document),
        !condition ? '' : 'ifAbsent' in condition ? 'absent' : condition.ifVersion,
        namespaceKeys.events,
      );
      const outcome = scriptOutcome('write_policy', code, ['written', 'precondition_failed', 'not_found']);
      return outcome === 'not_found' ? { outcome } : { outcome, version };
    },
  };
}
