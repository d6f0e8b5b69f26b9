import { Inject, Injectable } from '@nestjs/common';
import { retryFits } from '@sluice/core';
import type { BreakerActionResult, BreakerItem, BudgetItem } from '@sluice/protocol';
import type { BreakerAction, BreakerSnapshot, DependencyRef, Store } from '@sluice/store';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../auth/token-registry';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { readPolicyOf } from '../dependencies/read-policy';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { readInBatches } from './read-in-batches';

const AUDIT_ACTIONS: Record<BreakerAction['action'], string> = {
  trip: 'breaker.trip',
  force_close: 'breaker.force_close',
  reset: 'breaker.reset',
};

/** Operators' view and control of a namespace's breakers and budgets, fleet-wide. */
@Injectable()
export class BreakersAdminService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly audit: AuditService,
    private readonly breakerMetrics: BreakerMetrics,
    private readonly metrics: MetricsService,
  ) {}

  /** Forces or resets the breaker fleet-wide; `known` says whether any caller uses the dependency. */
  async act(principal: Principal, ref: DependencyRef, action: BreakerAction): Promise<BreakerActionResult> {
    const known = await this.registry.admitOperator(ref.namespace, ref.dependency);
    const snapshot = await this.store.setBreaker(ref, action);
    // Listed while forced, however long nobody uses it (the registry forgets after a day).
    await this.store.keepForcedListed(ref, snapshot.record);
    this.breakerMetrics.observe(ref, snapshot);
    await this.audit.record(principal, {
      action: AUDIT_ACTIONS[action.action],
      namespace: ref.namespace,
      target: ref.dependency,
      reason: 'reason' in action ? action.reason : null,
      // A forced state's duration as the operator asked it, and when it ends as the store set it.
      ...(action.action !== 'reset' && action.durationMs !== undefined
        ? { durationMs: action.durationMs, endsAt: snapshot.record.openUntil }
        : {}),
    });
    return { ...itemOf(ref.dependency, snapshot), known };
  }

  async breakers(namespace: string): Promise<BreakerItem[]> {
    const snapshots = await this.readAll(namespace);
    return snapshots.map(({ dependency, snapshot }) => itemOf(dependency, snapshot.breaker));
  }

  async budgets(namespace: string): Promise<BudgetItem[]> {
    const snapshots = await this.readAll(namespace);
    for (const { dependency, snapshot } of snapshots) {
      this.metrics.retryBudgetCap.set({ namespace, dependency }, snapshot.budget.cap);
    }
    return snapshots.map(({ dependency, policy, snapshot: { budget } }) => ({
      dependency,
      retries: budget.retries,
      retriesSucceeded: budget.retriesSucceeded,
      requests: budget.requests,
      limit: budget.limit,
      cap: budget.cap,
      exhausted: !retryFits(policy.retryBudget, budget.retries, budget.requests, budget.retriesSucceeded),
    }));
  }

  /** Every dependency's state, READ_BATCH at a time. */
  private async readAll(namespace: string) {
    const dependencies = await this.registry.list(namespace);
    return readInBatches(dependencies, (dependency) => this.readOne({ namespace, dependency }));
  }

  private async readOne(ref: DependencyRef) {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    const snapshot = await this.store.readDependency(ref, readPolicyOf(policy));
    this.registry.markRegistered(ref); // the store listed it
    this.breakerMetrics.observe(ref, snapshot.breaker);
    return { dependency: ref.dependency, policy, snapshot };
  }
}

function itemOf(dependency: string, { record }: BreakerSnapshot): BreakerItem {
  return { dependency, state: record.state, since: record.since, openUntil: record.openUntil, reason: record.reason };
}
