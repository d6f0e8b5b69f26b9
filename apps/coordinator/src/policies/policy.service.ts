import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import {
  DEFAULT_DEPENDENCY_POLICY,
  DEFAULT_IDEMPOTENCY_POLICY,
  DEFAULT_QUEUE_POLICY,
  mergeDependencyPolicy,
  mergeQueuePolicy,
  type DependencyPolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type QueuePolicy,
  type QueuePolicyOverride,
  type NamedLimitPolicy,
} from '@sluice/protocol';
import type { StoreEvent, Store, StoredPolicy, Unsubscribe } from '@sluice/store';
import { STORE } from '../store/store.provider';
import type { PoliciesFile } from './policies-file';

export const POLICIES_FILE = Symbol('POLICIES_FILE');

/**
 * How long a namespace's policies are used without reading them again. Changes reach every
 * instance at once through the namespace's event channel; this bounds how stale an instance can be
 * when that message is lost (pub/sub delivers at most once, and a reconnect drops messages).
 */
export const POLICY_CACHE_TTL_MS = 5000;
/** Most namespaces whose policies one instance keeps (and follows) at once. */
const MAX_CACHED_NAMESPACES = 1000;
/** Most resolved dependency policies kept per namespace. */
const MAX_RESOLVED_PER_NAMESPACE = 10_000;

/** One namespace's stored policy documents, as last read. */
interface NamespacePolicies {
  /** Built-in defaults ← the file's default ← the namespace default. */
  base: DependencyPolicy;
  dependencies: Map<string, DependencyPolicyOverride>;
  limits: Map<string, NamedLimitPolicy>;
  queues: Map<string, QueuePolicyOverride>;
  /** Effective dependency policies, merged on first use. */
  resolved: Map<string, DependencyPolicy>;
}

interface CacheEntry {
  policies: Promise<NamespacePolicies>;
  /** Infinity while the read is in flight, so concurrent callers share it. */
  expiresAt: number;
  /** When the read started (the store's timeout runs from here). */
  startedAt: number;
}

/** How long policies last read are used again after a read of them failed, before the next try. */
const STALE_RETRY_MS = 1000;

/** A namespace's event subscription: started on first use, live once the store confirmed it. */
interface Watch {
  unsubscribe?: Unsubscribe;
}

/**
 * Resolves the policies in force. A dependency's policy is the built-in defaults, overlaid by the
 * policies file's `default` (kept in each instance), the namespace default and the dependency's
 * own document (both from the store, where the admin API writes them and the file seeds them).
 *
 * A namespace's documents are read with one store call and cached, so decisions cost no extra
 * store call. A change made through any instance drops the cache of every instance at once
 * (the namespace's `policy` events); a short TTL bounds staleness if an event is lost.
 */
@Injectable()
export class PolicyService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Policies');
  private readonly cache = new Map<string, CacheEntry>();
  /**
   * Each namespace's policies as last read from the store, and when that read started: what a
   * failed read answers, even when an event dropped the cache entry in between (a lost
   * subscription says `resync` while the store is failing over).
   */
  private readonly lastRead = new Map<string, { policies: NamespacePolicies; startedAt: number }>();
  private readonly watches = new Map<string, Watch>();
  private readonly fileBase: DependencyPolicy;
  private warnedSubscribe = false;
  private stopped = false;

  constructor(
    @Inject(POLICIES_FILE) private readonly file: PoliciesFile,
    @Inject(STORE) private readonly store: Store,
  ) {
    this.fileBase = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, this.file.default);
  }

  /** The built-in defaults overlaid by the policies file's `default`: what a namespace default overlays. */
  get fileDefault(): DependencyPolicy {
    return this.fileBase;
  }

  async forDependency(namespace: string, dependency: string): Promise<DependencyPolicy> {
    const policies = await this.namespace(namespace);
    let policy = policies.resolved.get(dependency);
    if (!policy) {
      policy = mergeDependencyPolicy(policies.base, policies.dependencies.get(dependency));
      if (policies.resolved.size >= MAX_RESOLVED_PER_NAMESPACE) policies.resolved.clear();
      policies.resolved.set(dependency, policy);
    }
    return policy;
  }

  /** A named rate limit's policy; undefined when the limit is not defined. */
  async forLimit(namespace: string, limit: string): Promise<NamedLimitPolicy | undefined> {
    return (await this.namespace(namespace)).limits.get(limit);
  }

  /**
   * A queue's delivery policy: the defaults, the file's `queueDefault` and the namespace's (both in
   * process), then the queue's stored document.
   */
  async forQueue(namespace: string, queue: string): Promise<QueuePolicy> {
    const stored = (await this.namespace(namespace)).queues.get(queue);
    const inFile = this.file.namespaces[namespace];
    return [this.file.queueDefault, inFile?.queueDefault, stored].reduce(mergeQueuePolicy, DEFAULT_QUEUE_POLICY);
  }

  /** How long the namespace keeps idempotency keys (from the file; the default never above the maximum). */
  forIdempotency(namespace: string): IdempotencyPolicy {
    const merged = {
      ...DEFAULT_IDEMPOTENCY_POLICY,
      ...this.file.idempotency,
      ...this.file.namespaces[namespace]?.idempotency,
    };
    return { ...merged, retentionSeconds: Math.min(merged.retentionSeconds, merged.maxRetentionSeconds) };
  }

  /** Forgets what this instance read of a namespace: the next use reads the store again. */
  invalidate(namespace: string): void {
    const cached = this.cache.get(namespace);
    // A read in flight may have started before the change: forget it. A finished one is kept
    // expired, as the fallback should the next read fail.
    if (cached?.expiresAt === Infinity) this.cache.delete(namespace);
    else if (cached) cached.expiresAt = 0;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    const watches = [...this.watches.values()];
    this.watches.clear();
    this.cache.clear();
    this.lastRead.clear();
    await Promise.all(watches.map((watch) => watch.unsubscribe?.().catch(() => undefined)));
  }

  /**
   * The namespace's policies, from the cache or one shared store read. A caller that joined a
   * shared read late has not waited a whole store timeout yet when that read fails, so it reads
   * once more itself; a failed refresh answers the policies last read (for STALE_RETRY_MS).
   */
  private async namespace(namespace: string): Promise<NamespacePolicies> {
    const cached = this.cache.get(namespace);
    const joinedAt = Date.now();
    const inFlight = cached?.expiresAt === Infinity;
    if (cached && !inFlight && cached.expiresAt > joinedAt) return cached.policies;
    const entry = cached && inFlight ? cached : this.startRead(namespace);
    try {
      return await entry.policies;
    } catch (error) {
      if (entry.startedAt >= joinedAt) throw error;
      return this.startRead(namespace).policies;
    }
  }

  /** Starts one shared read of the namespace's policies and caches it. */
  private startRead(namespace: string): CacheEntry {
    const last = this.lastRead.get(namespace);
    const stale = last && Promise.resolve(last.policies);
    this.watch(namespace);
    const startedAt = Date.now();
    const entry: CacheEntry = { policies: this.load(namespace), expiresAt: Infinity, startedAt };
    entry.policies.then(
      (policies) => {
        const known = this.lastRead.get(namespace);
        if (this.cache.has(namespace) && (!known || known.startedAt <= startedAt)) {
          this.lastRead.set(namespace, { policies, startedAt });
        }
        if (this.cache.get(namespace) === entry) entry.expiresAt = startedAt + POLICY_CACHE_TTL_MS;
      },
      () => {
        if (this.cache.get(namespace) !== entry) return;
        if (stale) {
          // The store did not answer: keep deciding with what was read last, and try again soon.
          entry.policies = stale;
          entry.expiresAt = Date.now() + STALE_RETRY_MS;
        } else {
          // Not cached: the next call tries the store again.
          this.cache.delete(namespace);
        }
      },
    );
    if (stale) entry.policies = entry.policies.catch(() => stale);
    this.cache.delete(namespace); // re-inserted last: the oldest entry is evicted first
    this.cache.set(namespace, entry);
    this.evictOverflow();
    return entry;
  }

  private async load(namespace: string): Promise<NamespacePolicies> {
    const stored = await this.store.readPolicies(namespace);
    return this.compile(stored);
  }

  /** Documents are validated before they are written (admin API, policies file), so they are used as stored. */
  private compile(stored: StoredPolicy[]): NamespacePolicies {
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
      base: mergeDependencyPolicy(this.fileBase, namespaceDefault),
      dependencies,
      limits,
      queues,
      resolved: new Map(),
    };
  }

  /**
   * Follows the namespace's events: a `policy` event drops its cache. Until the subscription is
   * confirmed a change may be missed, so the cache is dropped again once it is; a subscription
   * that fails is tried again on the next read (staleness stays bounded by the TTL meanwhile).
   */
  private watch(namespace: string): void {
    if (this.stopped || this.watches.has(namespace)) return;
    const watch: Watch = {};
    this.watches.set(namespace, watch);
    const onEvent = (event: StoreEvent) => {
      // After a lost subscription (resync) a change may have been missed: read again.
      if (event.type === 'policy' || event.type === 'resync') this.invalidate(namespace);
    };
    Promise.resolve()
      .then(() => this.store.subscribeNamespace(namespace, onEvent))
      .then(
        (unsubscribe) => {
          if (this.watches.get(namespace) !== watch) {
            void unsubscribe().catch(() => undefined);
            return;
          }
          watch.unsubscribe = unsubscribe;
          this.invalidate(namespace);
        },
        (error: unknown) => {
          if (this.watches.get(namespace) === watch) this.watches.delete(namespace);
          const message =
            `cannot follow policy changes of namespace "${namespace}" (${(error as Error).message}): ` +
            `changes made through other instances apply here within ${POLICY_CACHE_TTL_MS} ms`;
          if (this.warnedSubscribe) this.logger.debug(message);
          else this.logger.warn(message);
          this.warnedSubscribe = true;
        },
      );
  }

  /** Forgets the namespaces used least recently first, and stops following them. */
  private evictOverflow(): void {
    while (this.cache.size > MAX_CACHED_NAMESPACES) this.forget(this.cache.keys().next().value as string);
    while (this.watches.size > MAX_CACHED_NAMESPACES) this.forget(this.watches.keys().next().value as string);
  }

  private forget(namespace: string): void {
    this.cache.delete(namespace);
    this.lastRead.delete(namespace);
    const watch = this.watches.get(namespace);
    this.watches.delete(namespace);
    void watch?.unsubscribe?.().catch(() => undefined);
  }
}
