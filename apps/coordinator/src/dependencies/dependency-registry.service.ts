import { Inject, Injectable } from '@nestjs/common';
import type { Store } from '@sluice/store';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { tooManyDependencies } from '../common/api-error';
import { STORE } from '../store/store.provider';

/** A dependency unused for a day frees its place under the namespace's cap. */
const RETENTION_MS = 24 * 60 * 60 * 1000;
/** How long this instance trusts a registration before renewing it in the store. */
const RENEW_AFTER_MS = 60_000;
const MAX_REMEMBERED = 100_000;

/**
 * Caps the distinct dependencies per namespace, so clients cannot grow Redis memory or metric
 * cardinality without bound. Known dependencies cost no store call until their renewal is due.
 */
@Injectable()
export class DependencyRegistry {
  private readonly renewAt = new Map<string, number>();

  constructor(
    @Inject(STORE) private readonly store: Store,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
  ) {}

  /** Throws too_many_dependencies (naming `field`) when the namespace is full. */
  async admit(namespace: string, dependency: string, field = 'dep'): Promise<void> {
    const cacheKey = `${namespace}/${dependency}`;
    const now = Date.now();
    if ((this.renewAt.get(cacheKey) ?? 0) > now) return;
    const cap = this.config.maxDependenciesPerNamespace;
    const admitted = await this.store.registerDependency({ namespace, dependency }, { cap, retentionMs: RETENTION_MS });
    if (!admitted) throw tooManyDependencies(field, cap);
    if (this.renewAt.size >= MAX_REMEMBERED) this.renewAt.clear();
    this.renewAt.set(cacheKey, now + RENEW_AFTER_MS);
  }

  /** The dependencies the namespace holds, by name. */
  list(namespace: string): Promise<string[]> {
    return this.store.listDependencies(namespace, RETENTION_MS);
  }
}
