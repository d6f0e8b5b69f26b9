import { Inject, Injectable } from '@nestjs/common';
import type { LeaseRenewal } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { ApiError } from '../common/api-error';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

const leaseNotFound = () => new ApiError(404, 'not_found', 'no such lease: unknown, released or expired');

/** Releases and renews the concurrency leases that admit hands out. */
@Injectable()
export class LeasesService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly metrics: MetricsService,
    private readonly registry: DependencyRegistry,
  ) {}

  async release(ref: DependencyRef, leaseId: string): Promise<void> {
    const { released, leasesInUse } = await this.store.releaseLease(ref, leaseId);
    if (this.registry.isRegistered(ref)) {
      this.metrics.concurrencyInUse.set({ namespace: ref.namespace, dependency: ref.dependency }, leasesInUse);
    }
    if (!released) throw leaseNotFound();
  }

  async renew(ref: DependencyRef, leaseId: string): Promise<LeaseRenewal> {
    const { concurrency } = await this.policies.forDependency(ref.namespace, ref.dependency);
    if (!concurrency) throw leaseNotFound();
    const { expiresAt } = await this.store.renewLease(ref, leaseId, concurrency.leaseMs);
    if (expiresAt === null) throw leaseNotFound();
    return { expiresAt };
  }
}
