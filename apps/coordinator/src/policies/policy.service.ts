import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import {
  DEFAULT_DEPENDENCY_POLICY,
  mergeDependencyPolicy,
  type DependencyPolicy,
  type IdempotencyPolicy,
  type NamedLimitPolicy,
  type QueuePolicy,
} from '@sluice/protocol';
import type { Store } from '@sluice/store';
import { STORE } from '../store/store.provider';
import {
  compileNamespacePolicies,
  dependencyPolicyOf,
  idempotencyPolicyOf,
  queuePolicyOf,
  type NamespacePolicies,
} from './namespace-policies';
import type { PoliciesFile } from './policies-file';
import { PolicyWatcher } from './policy-watcher';
import { StaleOnErrorCache } from './stale-on-error-cache';

export const POLICIES_FILE = Symbol('POLICIES_FILE');

/**
 * How long a namespace's policies are used without reading them again. Changes reach every
 * instance at once through the namespace's event channel; this bounds how stale an instance can be
 * when that message is lost (pub/sub delivers at most once, and a reconnect drops messages).
 */
export const POLICY_CACHE_TTL_MS = 5000;
/** Most namespaces whose policies one instance keeps (and follows) at once. */
const MAX_CACHED_NAMESPACES = 1000;
/** How long policies last read are used again after a read of them failed, before the next try. */
const STALE_RETRY_MS = 1000;

/**
 * Resolves the policies in force. A dependency's policy is the built-in defaults, overlaid by the
 * policies file's `default` (kept in each instance), the namespace default and the dependency's
 * own document (both from the store, where the admin API writes them and the file seeds them).
 *
 * A namespace's documents are read with one store call and cached (stale-on-error-cache.ts), so
 * decisions cost no extra store call. A change made through any instance drops the cache of every
 * instance at once (the namespace's `policy` events, policy-watcher.ts); a short TTL bounds
 * staleness if an event is lost. How documents combine is namespace-policies.ts.
 */
@Injectable()
export class PolicyService implements BeforeApplicationShutdown {
  private readonly fileBase: DependencyPolicy;
  private readonly cache: StaleOnErrorCache<NamespacePolicies>;
  private readonly watcher: PolicyWatcher;

  constructor(
    @Inject(POLICIES_FILE) private readonly file: PoliciesFile,
    @Inject(STORE) store: Store,
  ) {
    this.fileBase = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, this.file.default);
    this.watcher = new PolicyWatcher(store, (namespace) => this.invalidate(namespace), {
      maxWatched: MAX_CACHED_NAMESPACES,
      staleMs: POLICY_CACHE_TTL_MS,
      onEvict: (namespace) => this.cache.forget(namespace),
    });
    this.cache = new StaleOnErrorCache({
      load: async (namespace) => compileNamespacePolicies(this.fileBase, await store.readPolicies(namespace)),
      ttlMs: POLICY_CACHE_TTL_MS,
      staleRetryMs: STALE_RETRY_MS,
      maxEntries: MAX_CACHED_NAMESPACES,
      onRead: (namespace) => this.watcher.watch(namespace),
      onEvict: (namespace) => this.watcher.forget(namespace),
    });
  }

  /** The built-in defaults overlaid by the policies file's `default`: what a namespace default overlays. */
  get fileDefault(): DependencyPolicy {
    return this.fileBase;
  }

  /** forDependency's answer when the namespace's policies are cached unexpired; undefined when they must be read. */
  cachedForDependency(namespace: string, dependency: string): DependencyPolicy | undefined {
    const policies = this.cache.fresh(namespace);
    return policies && dependencyPolicyOf(policies, dependency);
  }

  async forDependency(namespace: string, dependency: string): Promise<DependencyPolicy> {
    return dependencyPolicyOf(await this.cache.get(namespace), dependency);
  }

  /** A named rate limit's policy; undefined when the limit is not defined. */
  async forLimit(namespace: string, limit: string): Promise<NamedLimitPolicy | undefined> {
    return (await this.cache.get(namespace)).limits.get(limit);
  }

  /** A queue's delivery policy (namespace-policies.ts, queuePolicyOf). */
  async forQueue(namespace: string, queue: string): Promise<QueuePolicy> {
    return queuePolicyOf(this.file, namespace, (await this.cache.get(namespace)).queues.get(queue));
  }

  /** How long the namespace keeps idempotency keys (from the file; the default never above the maximum). */
  forIdempotency(namespace: string): IdempotencyPolicy {
    return idempotencyPolicyOf(this.file, namespace);
  }

  /** Forgets what this instance read of a namespace: the next use reads the store again. */
  invalidate(namespace: string): void {
    this.cache.invalidate(namespace);
  }

  async beforeApplicationShutdown(): Promise<void> {
    const stopped = this.watcher.stop();
    this.cache.clear();
    await stopped;
  }
}
