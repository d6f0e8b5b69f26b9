import { SlidingWindowCounter, epochSecond, retryBudgetLimit, systemClock, type Clock } from '@sluice/core';
import type { BudgetView } from '@sluice/protocol';
import { SluiceKeys } from '../keys';
import type {
  DependencyReadWindows,
  DependencyRef,
  DependencyRegistration,
  DependencySnapshot,
  OutcomeBatch,
  OutcomeTotals,
  OutcomeWindows,
  RetryBudgetOutcome,
  RetryBudgetRequest,
  Store,
} from '../store';

type BudgetField = 'requests' | 'retries';
type OutcomeField = 'successes' | 'failures' | 'slow';

/**
 * The Store for the embedded single-process mode: the libs/core algorithms over Maps.
 * Keys come from the same SluiceKeys as Redis, so both stores name state alike.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  private readonly budgets = new Map<string, SlidingWindowCounter<BudgetField>>();
  private readonly outcomes = new Map<string, SlidingWindowCounter<OutcomeField>>();
  /** Namespace key → dependency → last use in epoch ms. */
  private readonly registries = new Map<string, Map<string, number>>();
  private readonly keys: SluiceKeys;

  private readonly clock: Clock;

  constructor(options: { clock?: Clock; keys?: SluiceKeys } = {}) {
    this.clock = options.clock ?? systemClock;
    this.keys = options.keys ?? new SluiceKeys();
  }

  async decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome> {
    const { budget: policy } = request;
    const second = epochSecond(this.clock.now());
    const counter = this.budgetCounter(ref);
    const { requests, retries } = counter.sum(second, policy.windowSeconds);
    const view = (retriesNow: number): BudgetView => ({
      retries: retriesNow,
      requests,
      limit: retryBudgetLimit(policy, requests),
      windowSeconds: policy.windowSeconds,
    });
    if (request.deadlineMs !== undefined && request.delayMs > request.deadlineMs) {
      return { verdict: 'deadline_exceeded', budget: view(retries) };
    }
    if (retries + 1 > retryBudgetLimit(policy, requests)) {
      return { verdict: 'budget_exhausted', budget: view(retries) };
    }
    counter.add(second, policy.windowSeconds, { retries: 1 });
    return { verdict: 'granted', budget: view(retries + 1) };
  }

  async recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, windows: OutcomeWindows): Promise<OutcomeTotals> {
    const second = epochSecond(this.clock.now());
    if (batch.requests > 0) {
      this.budgetCounter(ref).add(second, windows.budgetWindowSeconds, { requests: batch.requests });
    }
    const outcomes = this.outcomeCounter(ref);
    outcomes.add(second, windows.outcomeWindowSeconds, {
      successes: batch.successes,
      failures: batch.failures,
      slow: batch.slow,
    });
    return outcomes.sum(second, windows.outcomeWindowSeconds);
  }

  async readDependency(ref: DependencyRef, windows: DependencyReadWindows): Promise<DependencySnapshot> {
    const second = epochSecond(this.clock.now());
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const { budget: policy } = windows;
    const { requests, retries } = this.sumAndEvict(this.budgets, keys.budget, second, policy.windowSeconds) ?? {
      requests: 0,
      retries: 0,
    };
    const outcomes = this.sumAndEvict(this.outcomes, keys.outcomes, second, windows.outcomeWindowSeconds) ?? {
      successes: 0,
      failures: 0,
      slow: 0,
    };
    return {
      budget: { retries, requests, limit: retryBudgetLimit(policy, requests), windowSeconds: policy.windowSeconds },
      outcomes,
    };
  }

  async registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean> {
    const now = this.clock.now();
    const registryKey = this.keys.namespace(ref.namespace).dependencies;
    let registry = this.registries.get(registryKey);
    if (!registry) {
      registry = new Map();
      this.registries.set(registryKey, registry);
    }
    for (const [dependency, lastUse] of registry) {
      if (lastUse <= now - registration.retentionMs) this.forget(ref.namespace, dependency, registry);
    }
    if (!registry.has(ref.dependency) && registry.size >= registration.cap) return false;
    registry.set(ref.dependency, now);
    return true;
  }

  async ping(): Promise<void> {}

  async waitUntilReady(): Promise<void> {}

  async close(): Promise<void> {}

  private forget(namespace: string, dependency: string, registry: Map<string, number>): void {
    const keys = this.keys.dependency(namespace, dependency);
    this.budgets.delete(keys.budget);
    this.outcomes.delete(keys.outcomes);
    registry.delete(dependency);
  }

  /** Sums a counter without creating it, and drops it once empty (as a Redis key expires). */
  private sumAndEvict<F extends string>(
    counters: Map<string, SlidingWindowCounter<F>>,
    key: string,
    second: number,
    windowSeconds: number,
  ): Record<F, number> | undefined {
    const counter = counters.get(key);
    if (!counter) return undefined;
    const totals = counter.sum(second, windowSeconds);
    if (counter.isEmpty()) counters.delete(key);
    return totals;
  }

  private budgetCounter(ref: DependencyRef): SlidingWindowCounter<BudgetField> {
    const key = this.keys.dependency(ref.namespace, ref.dependency).budget;
    let counter = this.budgets.get(key);
    if (!counter) {
      counter = new SlidingWindowCounter<BudgetField>(['requests', 'retries']);
      this.budgets.set(key, counter);
    }
    return counter;
  }

  private outcomeCounter(ref: DependencyRef): SlidingWindowCounter<OutcomeField> {
    const key = this.keys.dependency(ref.namespace, ref.dependency).outcomes;
    let counter = this.outcomes.get(key);
    if (!counter) {
      counter = new SlidingWindowCounter<OutcomeField>(['successes', 'failures', 'slow']);
      this.outcomes.set(key, counter);
    }
    return counter;
  }
}
