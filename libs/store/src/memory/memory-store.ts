import {
  SlidingWindowCounter,
  claimIdempotencyEntry,
  completeIdempotencyEntry,
  epochSecond,
  releaseIdempotencyEntry,
  retryBudgetLimit,
  systemClock,
  type Clock,
  type IdempotencyEntry,
} from '@sluice/core';
import type { BudgetView } from '@sluice/protocol';
import { SluiceKeys } from '../keys';
import type {
  DeadLetterPageRequest,
  DeadLetterRetention,
  DeliveryAttemptOutcome,
  DeliveryAttemptRecord,
  IdempotencyClaim,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyCompletionOutcome,
  IdempotencyRecord,
  IdempotencyRef,
  IdempotencyReleaseOutcome,
  QueueRef,
  StoredDeadLetter,
  StoredDeadLetterPage,
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

import { ExpiringMap } from './expiring-map';

type BudgetField = 'requests' | 'retries';

interface AttemptCounter {
  attempts: number;
  firstAttemptAt: number;
  parked: boolean;
}

/** A queue's dead letters in parking order, as the Redis hash and sorted set keep them. */
interface DeadLetterQueue {
  sequence: number;
  /** Message id → entry; a Map keeps insertion order, and a re-parked message moves to the end. */
  entries: Map<string, StoredDeadLetter & { seq: number }>;
}
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
  private readonly idempotency = new ExpiringMap<IdempotencyEntry>();
  private readonly attempts = new ExpiringMap<AttemptCounter>();
  private readonly deadLetters = new ExpiringMap<DeadLetterQueue>();

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

  async claimIdempotencyKey(ref: IdempotencyRef, claim: IdempotencyClaim): Promise<IdempotencyClaimOutcome> {
    const now = this.clock.now();
    const key = this.keys.idempotency(ref.namespace, ref.key).record;
    const verdict = claimIdempotencyEntry(this.idempotency.get(key, now), claim, now);
    switch (verdict.verdict) {
      case 'claimed':
      case 'recovered':
        this.idempotency.set(key, verdict.entry, verdict.entry.expiresAt, now);
        return { outcome: verdict.verdict, leaseExpiresAt: verdict.entry.leaseExpiresAt };
      case 'completed':
        return { outcome: 'completed', response: verdict.entry.response ?? '' };
      case 'in_flight':
        return { outcome: 'in_flight', leaseRemainingMs: verdict.leaseRemainingMs };
      case 'mismatch':
        return { outcome: 'mismatch' };
    }
  }

  async completeIdempotencyKey(
    ref: IdempotencyRef,
    completion: IdempotencyCompletion,
  ): Promise<IdempotencyCompletionOutcome> {
    const now = this.clock.now();
    const key = this.keys.idempotency(ref.namespace, ref.key).record;
    const completed = completeIdempotencyEntry(
      this.idempotency.get(key, now),
      completion.token,
      completion.response,
      now,
    );
    if (!completed) return 'lease_lost';
    this.idempotency.set(key, completed, completed.expiresAt, now);
    return 'completed';
  }

  async releaseIdempotencyKey(ref: IdempotencyRef, token: string): Promise<IdempotencyReleaseOutcome> {
    const key = this.keys.idempotency(ref.namespace, ref.key).record;
    const outcome = releaseIdempotencyEntry(this.idempotency.get(key, this.clock.now()), token);
    if (outcome === 'released') this.idempotency.delete(key);
    return outcome;
  }

  async readIdempotencyKey(ref: IdempotencyRef): Promise<IdempotencyRecord | null> {
    const entry = this.idempotency.get(this.keys.idempotency(ref.namespace, ref.key).record, this.clock.now());
    if (!entry) return null;
    return {
      state: entry.state,
      createdAt: entry.createdAt,
      expiresAt: entry.expiresAt,
      ...(entry.state === 'in_flight' ? { leaseExpiresAt: entry.leaseExpiresAt } : {}),
      ...(entry.completedAt !== undefined ? { completedAt: entry.completedAt } : {}),
    };
  }

  async recordDeliveryAttempt(ref: QueueRef, attempt: DeliveryAttemptRecord): Promise<DeliveryAttemptOutcome> {
    const now = this.clock.now();
    const counterKey = this.keys.deliveryAttempts(ref.namespace, ref.queue, attempt.messageId);
    const counter = this.attempts.get(counterKey, now) ?? { attempts: 0, firstAttemptAt: now, parked: false };
    if (counter.parked) {
      return {
        attempt: counter.attempts,
        deadLetter: true,
        parkedNow: false,
        depth: this.pruneDeadLetters(ref, attempt.deadLetters, now),
      };
    }
    counter.attempts += 1;
    if (counter.attempts < attempt.maxAttempts) {
      this.attempts.set(counterKey, counter, now + attempt.attemptRetentionMs, now);
      return { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth: this.deadLetterDepth(ref, now) };
    }
    const queueKey = this.keys.queue(ref.namespace, ref.queue).deadLetters;
    const queue = this.deadLetters.get(queueKey, now) ?? { sequence: 0, entries: new Map() };
    queue.sequence += 1;
    queue.entries.delete(attempt.messageId);
    queue.entries.set(attempt.messageId, {
      messageId: attempt.messageId,
      payload: attempt.payload,
      error: attempt.error || null,
      attempts: counter.attempts,
      deadLetteredAt: now,
      firstAttemptAt: counter.firstAttemptAt,
      seq: queue.sequence,
    });
    const { retentionMs } = attempt.deadLetters;
    this.deadLetters.set(queueKey, queue, now + retentionMs, now);
    this.attempts.set(counterKey, { ...counter, parked: true }, now + retentionMs, now);
    const depth = this.pruneDeadLetters(ref, attempt.deadLetters, now);
    return { attempt: counter.attempts, deadLetter: true, parkedNow: true, depth };
  }

  async ackDelivery(ref: QueueRef, messageId: string): Promise<boolean> {
    const key = this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId);
    const known = this.attempts.get(key, this.clock.now()) !== undefined;
    this.attempts.delete(key);
    return known;
  }

  async listDeadLetters(ref: QueueRef, page: DeadLetterPageRequest): Promise<StoredDeadLetterPage> {
    const now = this.clock.now();
    const depth = this.pruneDeadLetters(ref, page.retention, now);
    const after = page.after === undefined ? -Infinity : Number(page.after);
    const queue = this.deadLetters.get(this.keys.queue(ref.namespace, ref.queue).deadLetters, now);
    const rows = [...(queue?.entries.values() ?? [])].filter((entry) => entry.seq > after);
    const items = rows.slice(0, page.limit);
    const next = rows.length > page.limit ? String(items[items.length - 1].seq) : null;
    return { items: items.map(withoutSequence), next, depth };
  }

  async redriveDeadLetter(ref: QueueRef, messageId: string): Promise<StoredDeadLetter | null> {
    return this.removeDeadLetter(ref, messageId);
  }

  async purgeDeadLetter(ref: QueueRef, messageId: string): Promise<boolean> {
    return (await this.removeDeadLetter(ref, messageId)) !== null;
  }

  async countDeadLetters(ref: QueueRef, retention: DeadLetterRetention): Promise<number> {
    return this.pruneDeadLetters(ref, retention, this.clock.now());
  }

  async ping(): Promise<void> {}

  async waitUntilReady(): Promise<void> {}

  async close(): Promise<void> {}

  private removeDeadLetter(ref: QueueRef, messageId: string): StoredDeadLetter | null {
    const queue = this.deadLetters.get(this.keys.queue(ref.namespace, ref.queue).deadLetters, this.clock.now());
    const entry = queue?.entries.get(messageId);
    if (!queue || !entry) return null;
    queue.entries.delete(messageId);
    this.attempts.delete(this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId));
    return withoutSequence(entry);
  }

  private deadLetterDepth(ref: QueueRef, now: number): number {
    return this.deadLetters.get(this.keys.queue(ref.namespace, ref.queue).deadLetters, now)?.entries.size ?? 0;
  }

  /** Drops dead letters past their retention and the oldest past the maximum length; returns the depth. */
  private pruneDeadLetters(ref: QueueRef, retention: DeadLetterRetention, now: number): number {
    const queue = this.deadLetters.get(this.keys.queue(ref.namespace, ref.queue).deadLetters, now);
    if (!queue) return 0;
    for (const [messageId, entry] of queue.entries) {
      if (entry.deadLetteredAt > now - retention.retentionMs && queue.entries.size <= retention.maxLength) break;
      queue.entries.delete(messageId);
    }
    return queue.entries.size;
  }

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

function withoutSequence({ seq: _seq, ...entry }: StoredDeadLetter & { seq: number }): StoredDeadLetter {
  return entry;
}
