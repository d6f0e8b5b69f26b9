import { Inject, Injectable } from '@nestjs/common';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy, type DependencyPolicy } from '@sluice/protocol';
import type { PoliciesFile } from './policies-file';

export const POLICIES_FILE = Symbol('POLICIES_FILE');

/**
 * Resolves the policy in force for a dependency: the built-in defaults, overlaid by the file's
 * default, the namespace's default and the dependency's own policy.
 */
@Injectable()
export class PolicyService {
  private readonly resolved = new Map<string, DependencyPolicy>();

  constructor(@Inject(POLICIES_FILE) private readonly file: PoliciesFile) {}

  async forDependency(namespace: string, dependency: string): Promise<DependencyPolicy> {
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
}
