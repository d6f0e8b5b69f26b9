import {
  DEFAULT_IDEMPOTENCY_POLICY,
  DEFAULT_QUEUE_POLICY,
  mergeDependencyPolicy,
  mergeQueuePolicy,
  type DependencyPolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type NamedLimitPolicy,
  type QueuePolicy,
  type QueuePolicyOverride,
} from '@sluice/protocol';
import type { StoredPolicy } from '@sluice/store';
import type { PoliciesFile } from './policies-file';

/** Most resolved dependency policies kept per namespace. */
const MAX_RESOLVED_PER_NAMESPACE = 10_000;

/** One namespace's stored policy documents, as last read. */
export interface NamespacePolicies {
  /** Built-in defaults ← the file's default ← the namespace default. */
  base: DependencyPolicy;
  dependencies: Map<string, DependencyPolicyOverride>;
  limits: Map<string, NamedLimitPolicy>;
  queues: Map<string, QueuePolicyOverride>;
  /** Effective dependency policies, merged on first use. */
  resolved: Map<string, DependencyPolicy>;
}

/**
 * A namespace's stored documents over `fileBase` (the built-in defaults and the file's default).
 * Documents are validated before they are written (admin API, policies file), so they are used as stored.
 */
export function compileNamespacePolicies(fileBase: DependencyPolicy, stored: StoredPolicy[]): NamespacePolicies {
  let namespaceDefault: DependencyPolicyOverride | undefined;
  const dependencies = new Map<string, DependencyPolicyOverride>();
  const limits = new Map<string, NamedLimitPolicy>();
  const queues = new Map<string, QueuePolicyOverride>();
  for (const { kind, name, document } of stored) {
    if (typeof document !== 'object' || document === null) continue;
    if (kind === 'default') namespaceDefault = document as DependencyPolicyOverride;
    else if (kind === 'dep') dependencies.set(name, document as DependencyPolicyOverride);
    else if (kind === 'limit') limits.set(name, document as NamedLimitPolicy);
    else if (kind === 'queue') queues.set(name, document as QueuePolicyOverride);
  }
  return {
    base: mergeDependencyPolicy(fileBase, namespaceDefault),
    dependencies,
    limits,
    queues,
    resolved: new Map(),
  };
}

/** A dependency's policy in force: the namespace's base overlaid by its own document, merged once. */
export function dependencyPolicyOf(policies: NamespacePolicies, dependency: string): DependencyPolicy {
  let policy = policies.resolved.get(dependency);
  if (!policy) {
    policy = mergeDependencyPolicy(policies.base, policies.dependencies.get(dependency));
    if (policies.resolved.size >= MAX_RESOLVED_PER_NAMESPACE) policies.resolved.clear();
    policies.resolved.set(dependency, policy);
  }
  return policy;
}

/**
 * A queue's delivery policy: the defaults, the file's `queueDefault` and the namespace's (both in
 * process), then the queue's stored document.
 */
export function queuePolicyOf(file: PoliciesFile, namespace: string, stored?: QueuePolicyOverride): QueuePolicy {
  const inFile = file.namespaces[namespace];
  return [file.queueDefault, inFile?.queueDefault, stored].reduce(mergeQueuePolicy, DEFAULT_QUEUE_POLICY);
}

/** How long the namespace keeps idempotency keys (from the file; the default never above the maximum). */
export function idempotencyPolicyOf(file: PoliciesFile, namespace: string): IdempotencyPolicy {
  const merged = {
    ...DEFAULT_IDEMPOTENCY_POLICY,
    ...file.idempotency,
    ...file.namespaces[namespace]?.idempotency,
  };
  return { ...merged, retentionSeconds: Math.min(merged.retentionSeconds, merged.maxRetentionSeconds) };
}
