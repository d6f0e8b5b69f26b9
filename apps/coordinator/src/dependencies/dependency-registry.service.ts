import { Inject, Injectable, Optional, type OnModuleDestroy } from '@nestjs/common';
import { isStoreUnavailableError, type DependencyRef, type Store } from '@sluice/store';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { tooManyDependencies } from '../common/api-error';
import { MetricsService } from '../metrics/metrics.service';
import { ResetWatcher } from '../store/reset-watcher';
import { STORE } from '../store/store.provider';

/** A dependency unused for a day frees its place under the namespace's cap. */
export const REGISTRY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How long this instance trusts a registration before renewing it in the store. */
const RENEW_AFTER_MS = 60_000;
/** Most dependencies this instance remembers; past it the one used least recently is forgotten. */
const MAX_REMEMBERED = 100_000;
/** How often dependencies unused for the retention are forgotten here (and their metric series removed). */
const SWEEP_INTERVAL_MS = 10 * 60_000;

/**
 * Caps the distinct dependencies per namespace, so clients cannot grow Redis memory or metric
 * cardinality without bound. Known dependencies cost no store call until their renewal is due.
 *
 * It is also what this instance knows to be registered: metric series carry a dependency's name
 * only once it is (reads of names nobody registered are answered, but label nothing), and a
 * dependency forgotten here takes its series with it.
 */
@Injectable()
export class DependencyRegistry implements OnModuleDestroy {
  /** By `namespace/dependency`, oldest use first: when its registration is due for renewal. */
  private readonly renewAt = new Map<string, number>();
  /** Registrations in flight, shared by everyone asking for the same dependency meanwhile. */
  private readonly registering = new Map<string, Promise<boolean>>();
  private readonly sweeper: NodeJS.Timeout;
  /** Registrations made before this (epoch ms) are not trusted: the store lost them in a reset. */
  private trustedSince = 0;
  /**
   * By namespace, the dependencies let through unregistered while its registry could not be
   * reached; at most the per-namespace cap of them in all, so an outage of the registry does not
   * let a flood of new names create state. A namespace's are forgotten once a registration in it
   * succeeds again (the rest register at their next use).
   */
  private readonly unverified = new Map<string, Set<string>>();
  private unverifiedCount = 0;

  constructor(
    @Inject(STORE) private readonly store: Store,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly metrics: MetricsService,
    @Optional() watcher?: ResetWatcher,
  ) {
    this.sweeper = setInterval(() => this.forgetUnused(Date.now()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    watcher?.onReset(() => this.registrationsLost(Date.now()));
  }

  /**
   * The store lost its data: every dependency this instance knows is registered again at its next
   * use, not when its renewal falls due (its metric series stay).
   */
  registrationsLost(now: number): void {
    this.trustedSince = now;
  }

  /**
   * Throws too_many_dependencies (naming `field`) when the namespace is full. Simultaneous first
   * asks for one dependency (every caller at once, when it fails) share one store call.
   *
   * When the registry itself cannot be reached (on a Redis Cluster, the master holding the
   * namespace's keys is failing over) the call goes on unregistered, to the dependency's own keys
   * on a master that may well answer: its metrics are labelled as an unregistered dependency's,
   * and its next use registers it. At most the per-namespace cap of dependencies, over all
   * namespaces, go on so; past it the registry's failure is the call's.
   */
  async admit(namespace: string, dependency: string, field = 'dep'): Promise<void> {
    const cacheKey = `${namespace}/${dependency}`;
    const now = Date.now();
    if (this.admittedAt(cacheKey, now)) return;
    let registration = this.registering.get(cacheKey);
    if (!registration) {
      registration = this.register(namespace, dependency, now).finally(() => this.registering.delete(cacheKey));
      this.registering.set(cacheKey, registration);
    }
    let registered: boolean;
    try {
      registered = await registration;
    } catch (error) {
      if (isStoreUnavailableError(error) && this.letThroughUnverified(namespace, dependency)) return;
      throw error;
    }
    if (!registered) throw tooManyDependencies(field, this.config.maxDependenciesPerNamespace);
  }

  /** Whether a dependency may go on while its registry cannot be reached (see {@link admit}). */
  private letThroughUnverified(namespace: string, dependency: string): boolean {
    let names = this.unverified.get(namespace);
    if (names?.has(dependency)) return true;
    if (this.unverifiedCount >= this.config.maxDependenciesPerNamespace) return false;
    if (!names) this.unverified.set(namespace, (names = new Set()));
    names.add(dependency);
    this.unverifiedCount++;
    return true;
  }

  private async register(namespace: string, dependency: string, now: number): Promise<boolean> {
    const registered = await this.store.registerDependency(
      { namespace, dependency },
      { cap: this.config.maxDependenciesPerNamespace, retentionMs: REGISTRY_RETENTION_MS, by: 'caller' },
    );
    const unverified = this.unverified.get(namespace);
    if (unverified) {
      this.unverifiedCount -= unverified.size;
      this.unverified.delete(namespace);
    }
    if (registered === 'refused') return false;
    this.remember(`${namespace}/${dependency}`, now + RENEW_AFTER_MS);
    return true;
  }

  /**
   * An operator's use of a dependency (a trip, a policy): a place under the cap like a caller's,
   * but always asked of the store and never trusted as a caller's registration here, so a caller's
   * first use after it still counts. Answers whether a caller has used the dependency within the
   * retention (false: likely a typo). Throws too_many_dependencies (naming `field`) when full.
   */
  async admitOperator(namespace: string, dependency: string, field = 'dep'): Promise<boolean> {
    const ref = { namespace, dependency };
    const registered = await this.store.registerDependency(ref, {
      cap: this.config.maxDependenciesPerNamespace,
      retentionMs: REGISTRY_RETENTION_MS,
      by: 'operator',
    });
    if (registered === 'refused') throw tooManyDependencies(field, this.config.maxDependenciesPerNamespace);
    this.markRegistered(ref);
    return registered === 'called';
  }

  /** Notes a dependency the store listed as registered (its renewal falls due at once). */
  markRegistered(ref: DependencyRef): void {
    const cacheKey = `${ref.namespace}/${ref.dependency}`;
    if (!this.renewAt.has(cacheKey)) this.remember(cacheKey, Date.now());
  }

  /** True when this instance has seen the dependency registered: its metric series may exist. */
  /** Whether admit() would answer at once, without the store: the dependency's registration is fresh. */
  admitted(namespace: string, dependency: string): boolean {
    return this.admittedAt(`${namespace}/${dependency}`, Date.now());
  }

  private admittedAt(cacheKey: string, now: number): boolean {
    const renewAt = this.renewAt.get(cacheKey) ?? 0;
    return renewAt > now && renewAt - RENEW_AFTER_MS >= this.trustedSince;
  }

  isRegistered(ref: DependencyRef): boolean {
    return this.renewAt.has(`${ref.namespace}/${ref.dependency}`);
  }

  /** The dependencies the namespace holds, by name. */
  list(namespace: string): Promise<string[]> {
    return this.store.listDependencies(namespace, REGISTRY_RETENTION_MS);
  }

  /** How many dependencies this instance remembers. */
  get size(): number {
    return this.renewAt.size;
  }

  /** Forgets (with their metric series) the dependencies unused here since `now - retention`. */
  forgetUnused(now: number): void {
    const cutoff = now - REGISTRY_RETENTION_MS + RENEW_AFTER_MS;
    for (const [cacheKey, renewAt] of this.renewAt) {
      if (renewAt > cutoff) break; // oldest use first: the rest are newer
      this.forget(cacheKey);
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  private remember(cacheKey: string, renewAt: number): void {
    this.renewAt.delete(cacheKey); // re-inserted last: the least recently used come first
    this.renewAt.set(cacheKey, renewAt);
    while (this.renewAt.size > MAX_REMEMBERED) this.forget(this.renewAt.keys().next().value as string);
  }

  private forget(cacheKey: string): void {
    this.renewAt.delete(cacheKey);
    const separator = cacheKey.indexOf('/');
    this.metrics.forgetDependency(cacheKey.slice(0, separator), cacheKey.slice(separator + 1));
  }
}
