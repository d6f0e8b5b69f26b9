import { Inject, Injectable } from '@nestjs/common';
import {
  DEFAULT_DEPENDENCY_POLICY,
  DEFAULT_IDEMPOTENCY_POLICY,
  DEFAULT_QUEUE_POLICY,
  mergeDependencyPolicy,
  mergeQueuePolicy,
  type DependencyPolicy,
  type IdempotencyPolicy,
  type QueuePolicy,
} from '@sluice/protocol';
import type { PoliciesFile } from './policies-file';

export const POLICIES_FILE = Symbol('POLICIES_FILE');

/**
 * Resolves the policy in force for a dependency: the built-in defaults, overlaid by the file's
 * default, the namespace's default and the dependency's own policy. Queues and idempotency
 * settings resolve the same way.
 */
@Injectable()
export class PolicyService {
  private readonly resolved = new Map<string, DependencyPolicy>();

  constructor(@Inject(POLICIES_FILE) private readonly file: PoliciesFile) {}

  forDependency(namespace: string, dependency: string): DependencyPolicy {
    const cacheKey = `${namespace}/${dependency}`;
    let policy = this.resolved.get(cacheKey);
    if (!policy) {
      const inNamespace = this.file.namespaces[namespace];
      policy = [this.file.default, inNamespace?.default, inNamespace?.dependencies[dependency]].reduce(
        mergeDependencyPolicy,
        DEFAULT_DEPENDENCY_POLICY,
      );
      if (this.resolved.size >= 10_000) this.resolved.clear();
      this.resolved.set(cacheKey, policy);
    }
    return policy;
  }

  /** A queue's policy: defaults, the file's `queueDefault`, the namespace's, then the queue's own. */
  forQueue(namespace: string, queue: string): QueuePolicy {
    const inNamespace = this.file.namespaces[namespace];
    return [this.file.queueDefault, inNamespace?.queueDefault, inNamespace?.queues?.[queue]].reduce(
      mergeQueuePolicy,
      DEFAULT_QUEUE_POLICY,
    );
  }

  /** How long the namespace keeps idempotency keys (default and maximum; the default never above the maximum). */
  forIdempotency(namespace: string): IdempotencyPolicy {
    const merged = {
      ...DEFAULT_IDEMPOTENCY_POLICY,
      ...this.file.idempotency,
      ...this.file.namespaces[namespace]?.idempotency,
    };
    return { ...merged, retentionSeconds: Math.min(merged.retentionSeconds, merged.maxRetentionSeconds) };
  }
}
