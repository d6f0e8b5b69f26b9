import { Inject, Injectable } from '@nestjs/common';
import type { DependencyPolicy, RetryAsk, RetryBatchDecision, RetryDecision } from '@sluice/protocol';
import type { DependencyRef, RetryBatchOutcome, Store } from '@sluice/store';
import { BreakerMetrics } from '../breakers/breaker-metrics';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { readPolicyOf } from '../dependencies/read-policy';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { RetryService, beforeTheStore } from './retry.service';

/** The asks of a batch for one dependency, with what each costs before the store. */
interface DependencyAsks {
  ref: DependencyRef;
  policy: DependencyPolicy;
  /** Indexes into the batch, in order. */
  indexes: number[];
  prepared: Array<ReturnType<typeof beforeTheStore>>;
}

/**
 * Decides a batch of retry asks exactly as the same asks one by one (RetryService), in order: one
 * store call per dependency (decide_retries-N.lua decides its asks in order), every dependency at
 * once. The dependencies are registered before anything is decided, so a refused one changes nothing.
 */
@Injectable()
export class RetryBatchService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly breakerMetrics: BreakerMetrics,
    private readonly retries: RetryService,
  ) {}

  async decide(namespace: string, asks: readonly RetryAsk[]): Promise<RetryBatchDecision> {
    const groups = await Promise.all(
      [...indexesByDependency(asks)].map(async ([dependency, indexes]): Promise<DependencyAsks> => {
        const policy = await this.policies.forDependency(namespace, dependency);
        return {
          ref: { namespace, dependency },
          policy,
          indexes,
          prepared: indexes.map((i) => beforeTheStore(policy, asks[i])),
        };
      }),
    );
    await Promise.all(
      groups.map(({ ref, indexes, prepared }) => {
        const first = prepared.findIndex((ask) => ask.denial === null);
        return first < 0 ? undefined : this.registry.admit(namespace, ref.dependency, `asks.${indexes[first]}.dep`);
      }),
    );
    const decisions: RetryDecision[] = new Array(asks.length);
    await Promise.all(
      groups.map(async (group) => {
        const { ref, policy, indexes, prepared } = group;
        const { decisions: outcomes, breaker } = await this.decideGroup(group, asks);
        this.breakerMetrics.observe(ref, breaker);
        indexes.forEach((index, k) => {
          const { verdict, budget, delayMs, retryAfterMs } = outcomes[k];
          const reason = prepared[k].denial ?? verdict ?? 'granted';
          decisions[index] = this.retries.answer(ref, policy, { reason, budget, breaker, delayMs, retryAfterMs });
        });
      }),
    );
    return { decisions };
  }

  /** One store call: the asks decided in order, or, when each was denied before the store, one read. */
  private async decideGroup(group: DependencyAsks, asks: readonly RetryAsk[]): Promise<RetryBatchOutcome> {
    const { ref, policy, indexes, prepared } = group;
    if (prepared.every((ask) => ask.denial !== null)) {
      const { budget, breaker } = await this.store.readDependency(ref, readPolicyOf(policy));
      return {
        decisions: prepared.map(({ delayMs }) => ({ verdict: null, budget, delayMs, retryAfterMs: null })),
        breaker,
      };
    }
    return this.store.decideRetries(ref, {
      budget: policy.retryBudget,
      latencyWindowSeconds: policy.breaker.windowSeconds,
      asks: indexes.map((index, k) => ({
        delayMs: prepared[k].delayMs,
        deadlineMs: asks[index].deadlineMs,
        requestId: asks[index].requestId,
        read: prepared[k].denial !== null,
      })),
    });
  }
}

/** The asks' indexes by dependency, each list in order. */
function indexesByDependency(asks: readonly RetryAsk[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  asks.forEach((ask, index) => {
    const indexes = groups.get(ask.dep);
    if (indexes) indexes.push(index);
    else groups.set(ask.dep, [index]);
  });
  return groups;
}
