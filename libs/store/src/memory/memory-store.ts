import {
  LATENCY_BOUNDS_MS,
  gcraTake,
  latencyQuantile,
  BreakerMachine,
  CLOSED_BREAKER,
  SlidingWindowCounter,
  blocksCalls,
  epochSecond,
  retryBudgetLimit,
  systemClock,
  claimIdempotencyEntry,
  completeIdempotencyEntry,
  releaseIdempotencyEntry,
  type BreakerRecord,
  type Clock,
  type IdempotencyEntry,
} from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type RateLimitPolicy } from '@sluice/protocol';
import { SluiceKeys } from '../keys';
import { admitOutcomeTtlMs, retryOutcomeTtlMs, takeOutcomeTtlMs } from '../request-outcomes';
import { AUDIT_ENTRIES_KEPT } from '../store';
import { ExpiringMap } from './expiring-map';
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
  AuditEntry,
  AuditRecord,
  PolicyDocumentRef,
  PolicyWriteCondition,
  PolicyWriteOutcome,
  StoredPolicy,
  AdmitOutcome,
  AdmitRequest,
  BreakerAction,
  BreakerSnapshot,
  RecordedOutcomes,
  DependencyReadPolicy,
  DependencyRef,
  DependencyRegistration,
  DependencySnapshot,
  EventHandler,
  LeaseOutcome,
  RateLimitOutcome,
  RateLimitRef,
  OutcomeBatch,
  OutcomePolicy,
  RetryBudgetOutcome,
  RetryBudgetRequest,
  Store,
  StoreEvent,
  Unsubscribe,
} from '../store';

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

/** What a granted call with a caller-chosen id keeps for its repeats (the request keys' hashes in Redis). */
type KeptOutcome =
  | { kind: 'retry'; delayMs: number; budget: RetryBudgetOutcome['budget'] }
  | { kind: 'admit'; probe?: AdmitOutcome['probe']; lease?: AdmitOutcome['lease']; leasesInUse: number | null }
  | { kind: 'take'; remaining: number; resetMs: number };

/** Everything kept for one dependency (in Redis: the keys of one hash tag). */
interface DependencyState {
  budget: SlidingWindowCounter<BudgetField>;
  outcomes: SlidingWindowCounter<OutcomeField>;
  /** Reporter → last report of a failed or slow call (epoch ms). */
  reporters: Map<string, number>;
  /** Reporter → last report of any kind (epoch ms). */
  activeReporters: Map<string, number>;
  breaker: BreakerRecord;
  /** Probe token → lease expiry (epoch ms). */
  probes: Map<string, number>;
  /** The rate limit's theoretical arrival time (epoch ms). */
  rateTat: number | null;
  /** Concurrency lease id → expiry (epoch ms). */
  leases: Map<string, number>;
  latency: SlidingWindowCounter<string>;
}

/**
 * The Store for the embedded single-process mode: the libs/core algorithms over Maps, with the
 * same semantics as the Lua scripts (the conformance suite holds both to it). Keys and channels
 * come from the same SluiceKeys as Redis.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  private readonly dependencies = new Map<string, DependencyState>();
  /** Namespace key → dependency → last use in epoch ms. */
  private readonly registries = new Map<string, Map<string, number>>();
  private readonly handlers = new Map<string, Set<EventHandler>>();
  /** Namespace policies key → `<kind>:<name>` → document (null once deleted: the version lives on). */
  private readonly policies = new Map<string, Map<string, StoredPolicy>>();
  private readonly audit: AuditEntry[] = [];
  /** Named rate limit key → theoretical arrival time (epoch ms). */
  private readonly rateLimits = new Map<string, number>();
  private readonly idempotency = new ExpiringMap<IdempotencyEntry>();
  private readonly attempts = new ExpiringMap<AttemptCounter>();
  private readonly deadLetters = new ExpiringMap<DeadLetterQueue>();
  /** Request key (SluiceKeys.dependencyRequests, rateLimitRequest) → the first granted outcome. */
  private readonly kept = new ExpiringMap<KeptOutcome>();
  private readonly clock: Clock;
  private readonly keys: SluiceKeys;

  constructor(options: { clock?: Clock; keys?: SluiceKeys } = {}) {
    this.clock = options.clock ?? systemClock;
    this.keys = options.keys ?? new SluiceKeys();
  }

  async decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome> {
    const { budget: policy } = request;
    const now = this.clock.now();
    const second = epochSecond(now);
    const state = this.state(ref);
    const machine = this.settle(ref, state, now);
    const requestKey =
      request.requestId === undefined
        ? undefined
        : this.keys.dependencyRequests(ref.namespace, ref.dependency).retry(request.requestId);
    const kept = requestKey === undefined ? undefined : this.kept.get(requestKey, now);
    if (kept?.kind === 'retry') {
      return { verdict: 'granted', delayMs: kept.delayMs, budget: { ...kept.budget }, breaker: snapshot(machine) };
    }
    const { requests, retries } = state.budget.sum(second, policy.windowSeconds);
    const limit = retryBudgetLimit(policy, requests);
    let verdict: RetryBudgetOutcome['verdict'] = 'granted';
    if (blocksCalls(state.breaker.state)) verdict = 'breaker_open';
    else if (
      request.deadlineMs !== undefined &&
      request.delayMs +
        fleetP99(state, second, request.latencyWindowSeconds ?? DEFAULT_DEPENDENCY_POLICY.breaker.windowSeconds) >
        request.deadlineMs
    ) {
      verdict = 'deadline_exceeded';
    } else if (retries + 1 > limit) verdict = 'budget_exhausted';
    else state.budget.add(second, policy.windowSeconds, { retries: 1 });
    const budget = {
      retries: retries + (verdict === 'granted' ? 1 : 0),
      requests,
      limit,
      windowSeconds: policy.windowSeconds,
    };
    if (verdict === 'granted' && requestKey !== undefined) {
      const expiresAt = now + retryOutcomeTtlMs(policy.windowSeconds);
      this.kept.set(requestKey, { kind: 'retry', delayMs: request.delayMs, budget: { ...budget } }, expiresAt, now);
    }
    return { verdict, delayMs: request.delayMs, budget, breaker: snapshot(machine) };
  }

  async recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes> {
    const now = this.clock.now();
    const second = epochSecond(now);
    const windowSeconds = policy.breaker.windowSeconds;
    const state = this.state(ref);
    const machine = new BreakerMachine(state.breaker).settle(now);
    pruneExpired(state.probes, now);
    for (const probe of batch.probes) {
      if (machine.record.state === 'half_open' && state.probes.delete(probe.token)) {
        machine.probeOutcome(policy.breaker, probe.success, now);
      }
    }
    if (batch.latency) state.latency.add(second, windowSeconds, latencyDelta(batch.latency));
    const retries = batch.retries ?? 0;
    if (batch.requests + retries > 0) {
      state.budget.add(second, policy.budgetWindowSeconds, { requests: batch.requests, retries });
    }
    const entered = machine.transitions.length > 0 ? machine.record.state : undefined;
    if (entered === 'closed' || entered === 'open') {
      clearWindow(state);
    } else {
      state.outcomes.add(second, windowSeconds, batch);
      pruneExpired(state.reporters, now - windowSeconds * 1000);
      if (batch.failures + batch.slow > 0) state.reporters.set(batch.reporter, now);
      const totals = state.outcomes.sum(second, windowSeconds);
      if (machine.evaluate(policy.breaker, { ...totals, failingReporters: state.reporters.size }, now)) {
        clearWindow(state);
      }
    }
    pruneExpired(state.activeReporters, now - policy.budgetWindowSeconds * 1000);
    state.activeReporters.set(batch.reporter, now);
    return { breaker: this.commit(ref, state, machine), reporters: state.activeReporters.size };
  }

  async admit(ref: DependencyRef, request: AdmitRequest): Promise<AdmitOutcome> {
    const now = this.clock.now();
    const state = this.state(ref);
    const machine = this.settle(ref, state, now);
    // 0. A repeat of a kept grant.
    const requestKey =
      request.requestId === undefined
        ? undefined
        : this.keys.dependencyRequests(ref.namespace, ref.dependency).admit(request.requestId);
    const kept = requestKey === undefined ? undefined : this.kept.get(requestKey, now);
    if (kept?.kind === 'admit') {
      return {
        verdict: 'granted',
        ...(kept.probe ? { probe: { ...kept.probe } } : {}),
        ...(kept.lease ? { lease: { ...kept.lease } } : {}),
        retryAfterMs: 0,
        leasesInUse: kept.leasesInUse,
        breaker: snapshot(machine),
      };
    }
    const refused = (
      verdict: AdmitOutcome['verdict'],
      retryAfterMs: number | null,
      leasesInUse: number | null = null,
    ) => ({
      verdict,
      retryAfterMs,
      leasesInUse,
      breaker: snapshot(machine),
    });
    // 1. The breaker.
    const { breaker } = state;
    const probe = breaker.state === 'half_open';
    if (probe) {
      pruneExpired(state.probes, now);
      if (state.probes.size >= request.breaker.halfOpenProbes) {
        return refused('breaker_open', Math.max(Math.min(...state.probes.values()) - now, 0));
      }
    } else if (blocksCalls(breaker.state)) {
      return refused('breaker_open', breaker.openUntil === null ? null : Math.max(breaker.openUntil - now, 0));
    }
    // 2. The rate limit, stored only if the call is admitted.
    const rate = request.rateLimit ? gcraTake(request.rateLimit, state.rateTat, now, request.cost) : undefined;
    if (rate && !rate.allow) return refused('rate_limited', rate.retryAfterMs);
    // 3. The concurrency limit.
    let lease: AdmitOutcome['lease'];
    if (request.concurrency) {
      pruneExpired(state.leases, now);
      if (state.leases.size >= request.concurrency.limit) {
        return refused('concurrency_limited', Math.max(Math.min(...state.leases.values()) - now, 0), state.leases.size);
      }
      lease = { id: request.leaseId, expiresAt: now + request.concurrency.leaseMs };
      state.leases.set(lease.id, lease.expiresAt);
    }
    if (rate) state.rateTat = rate.tat;
    let probeLease: AdmitOutcome['probe'];
    if (probe) {
      probeLease = { token: request.probeToken, expiresAt: now + request.breaker.probeLeaseMs };
      state.probes.set(probeLease.token, probeLease.expiresAt);
    }
    const leasesInUse = request.concurrency ? state.leases.size : null;
    if (requestKey !== undefined) {
      const expiresAt = now + admitOutcomeTtlMs(request.concurrency?.leaseMs ?? 0, request.breaker.probeLeaseMs);
      const outcome: KeptOutcome = {
        kind: 'admit',
        ...(probeLease ? { probe: { ...probeLease } } : {}),
        ...(lease ? { lease: { ...lease } } : {}),
        leasesInUse,
      };
      this.kept.set(requestKey, outcome, expiresAt, now);
    }
    return {
      verdict: 'granted',
      ...(probeLease ? { probe: probeLease } : {}),
      ...(lease ? { lease } : {}),
      retryAfterMs: 0,
      leasesInUse,
      breaker: snapshot(machine),
    };
  }

  async takeRateLimit(
    ref: RateLimitRef,
    policy: RateLimitPolicy,
    cost: number,
    requestId?: string,
  ): Promise<RateLimitOutcome> {
    const key = this.keys.rateLimit(ref.namespace, ref.limit, ref.key);
    const now = this.clock.now();
    const requestKey =
      requestId === undefined ? undefined : this.keys.rateLimitRequest(ref.namespace, ref.limit, ref.key, requestId);
    const kept = requestKey === undefined ? undefined : this.kept.get(requestKey, now);
    if (kept?.kind === 'take') {
      return { allow: true, limit: policy.burst, remaining: kept.remaining, retryAfterMs: 0, resetMs: kept.resetMs };
    }
    const stored = this.rateLimits.get(key);
    const decision = gcraTake(policy, stored !== undefined && stored > now ? stored : null, now, cost);
    if (decision.allow) this.rateLimits.set(key, decision.tat);
    this.evictSpentRateLimits(now);
    const { allow, limit, remaining, retryAfterMs, resetMs } = decision;
    if (allow && requestKey !== undefined) {
      this.kept.set(requestKey, { kind: 'take', remaining, resetMs }, now + takeOutcomeTtlMs(policy.periodMs), now);
    }
    return { allow, limit, remaining, retryAfterMs, resetMs };
  }

  async releaseLease(ref: DependencyRef, leaseId: string): Promise<{ released: boolean; leasesInUse: number }> {
    const state = this.dependencies.get(this.keys.dependency(ref.namespace, ref.dependency).breaker);
    if (!state) return { released: false, leasesInUse: 0 };
    pruneExpired(state.leases, this.clock.now());
    const released = state.leases.delete(leaseId);
    return { released, leasesInUse: state.leases.size };
  }

  async renewLease(ref: DependencyRef, leaseId: string, leaseMs: number): Promise<LeaseOutcome> {
    const state = this.dependencies.get(this.keys.dependency(ref.namespace, ref.dependency).breaker);
    if (!state) return { expiresAt: null, leasesInUse: 0 };
    const now = this.clock.now();
    pruneExpired(state.leases, now);
    if (!state.leases.has(leaseId)) return { expiresAt: null, leasesInUse: state.leases.size };
    state.leases.set(leaseId, now + leaseMs);
    return { expiresAt: now + leaseMs, leasesInUse: state.leases.size };
  }

  async setBreaker(ref: DependencyRef, action: BreakerAction): Promise<BreakerSnapshot> {
    const now = this.clock.now();
    const state = this.state(ref);
    const machine = new BreakerMachine(state.breaker).settle(now);
    if (action.action === 'trip') machine.trip(now, action.reason, action.durationMs);
    else if (action.action === 'force_close') machine.forceClose(now, action.reason, action.durationMs);
    else machine.reset(now);
    clearWindow(state);
    const result = this.commit(ref, state, machine);
    if (result.transitions.length === 0) this.publishBreaker(ref, state.breaker, state.breaker.state);
    return result;
  }

  async readDependency(ref: DependencyRef, policy: DependencyReadPolicy): Promise<DependencySnapshot> {
    const now = this.clock.now();
    const second = epochSecond(now);
    const { budget: budgetPolicy } = policy;
    const state = this.dependencies.get(this.keys.dependency(ref.namespace, ref.dependency).breaker);
    const machine = state ? this.settle(ref, state, now) : new BreakerMachine({ ...CLOSED_BREAKER });
    const { requests, retries } = state?.budget.sum(second, budgetPolicy.windowSeconds) ?? { requests: 0, retries: 0 };
    const outcomes = state?.outcomes.sum(second, policy.outcomeWindowSeconds) ?? { successes: 0, failures: 0, slow: 0 };
    const latency = LATENCY_FIELDS.map((field) =>
      state ? state.latency.sum(second, policy.outcomeWindowSeconds)[field] : 0,
    );
    return {
      budget: {
        retries,
        requests,
        limit: retryBudgetLimit(budgetPolicy, requests),
        windowSeconds: budgetPolicy.windowSeconds,
      },
      outcomes,
      latency,
      breaker: snapshot(machine),
    };
  }

  async registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean> {
    const registry = this.registry(ref.namespace, registration.retentionMs);
    if (!registry.has(ref.dependency) && registry.size >= registration.cap) return false;
    const isNew = !registry.has(ref.dependency);
    registry.set(ref.dependency, this.clock.now());
    if (isNew) this.publish(this.keys.namespace(ref.namespace).events, { type: 'dependency', dep: ref.dependency });
    return true;
  }

  async listDependencies(namespace: string, retentionMs: number): Promise<string[]> {
    return [...this.registry(namespace, retentionMs).keys()].sort();
  }

  async registerNamespace(namespace: string, registration: DependencyRegistration): Promise<boolean> {
    const registry = this.names(this.keys.namespaces(), registration.retentionMs);
    if (!registry.has(namespace) && registry.size >= registration.cap) return false;
    registry.set(namespace, this.clock.now());
    return true;
  }

  async listNamespaces(retentionMs: number): Promise<string[]> {
    return [...this.names(this.keys.namespaces(), retentionMs).keys()].sort();
  }

  async readPolicies(namespace: string): Promise<StoredPolicy[]> {
    const policies = this.policies.get(this.keys.namespace(namespace).policies);
    if (!policies) return [];
    return [...policies.values()]
      .filter((stored) => stored.document !== null)
      .map((stored) => ({ ...stored, document: structuredClone(stored.document) }));
  }

  async writePolicy(
    namespace: string,
    ref: PolicyDocumentRef,
    document: unknown,
    condition?: PolicyWriteCondition,
  ): Promise<PolicyWriteOutcome> {
    const keys = this.keys.namespace(namespace);
    let policies = this.policies.get(keys.policies);
    if (!policies) {
      policies = new Map();
      this.policies.set(keys.policies, policies);
    }
    const field = `${ref.kind}:${ref.name}`;
    const stored = policies.get(field);
    const exists = stored !== undefined && stored.document !== null;
    const version = stored?.version ?? 0;
    if (condition && 'ifAbsent' in condition && exists) return { outcome: 'precondition_failed', version };
    if (condition && 'ifVersion' in condition && (!exists || condition.ifVersion !== version)) {
      return { outcome: 'precondition_failed', version: exists ? version : 0 };
    }
    if (document === null && !exists) return { outcome: 'not_found' };
    // The version outlives a delete, so an ETag is never reused for another document.
    policies.set(field, {
      ...ref,
      version: version + 1,
      document: document === null ? null : structuredClone(document),
    });
    this.publish(keys.events, { type: 'policy', kind: ref.kind, name: ref.name });
    return { outcome: 'written', version: version + 1 };
  }

  async appendAudit(record: AuditRecord): Promise<number> {
    const at = this.clock.now();
    this.audit.push({ ...record, at });
    if (this.audit.length > AUDIT_ENTRIES_KEPT) this.audit.splice(0, this.audit.length - AUDIT_ENTRIES_KEPT);
    return at;
  }

  async readAudit(query: { namespace?: string; limit: number }): Promise<AuditEntry[]> {
    const matching = this.audit.filter((entry) => !query.namespace || entry.namespace === query.namespace);
    return matching.slice(Math.max(matching.length - query.limit, 0)).map((entry) => ({ ...entry }));
  }

  async subscribeDependency(ref: DependencyRef, handler: EventHandler): Promise<Unsubscribe> {
    return this.subscribe(this.keys.dependency(ref.namespace, ref.dependency).events, handler);
  }

  async subscribeNamespace(namespace: string, handler: EventHandler): Promise<Unsubscribe> {
    return this.subscribe(this.keys.namespace(namespace).events, handler);
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
      case 'resumed':
        return {
          outcome: 'resumed',
          token: verdict.entry.token,
          leaseExpiresAt: verdict.entry.leaseExpiresAt,
          recovered: verdict.entry.recovered ?? false,
        };
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
    if (attempt.attempt !== undefined && attempt.attempt <= counter.attempts) {
      // A repeat of a delivery already counted: nothing changes.
      return { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth: this.deadLetterDepth(ref, now) };
    }
    counter.attempts = attempt.attempt ?? counter.attempts + 1;
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

  async close(): Promise<void> {
    this.handlers.clear();
  }

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

  /** Forgets rate limit keys back at a full burst (as their Redis keys expire). */
  private evictSpentRateLimits(now: number): void {
    if (this.rateLimits.size < 10_000) return;
    for (const [key, tat] of this.rateLimits) if (tat <= now) this.rateLimits.delete(key);
  }

  /** The registry of a namespace, without the dependencies unused for the retention (their state goes too). */
  private registry(namespace: string, retentionMs: number): Map<string, number> {
    return this.names(this.keys.namespace(namespace).dependencies, retentionMs, (dependency) =>
      this.dependencies.delete(this.keys.dependency(namespace, dependency).breaker),
    );
  }

  /** A capped registry of names by last use, forgetting those unused for `retentionMs`. */
  private names(registryKey: string, retentionMs: number, forget?: (name: string) => void): Map<string, number> {
    let registry = this.registries.get(registryKey);
    if (!registry) {
      registry = new Map();
      this.registries.set(registryKey, registry);
    }
    const now = this.clock.now();
    for (const [name, lastUse] of registry) {
      if (lastUse > now - retentionMs) continue;
      registry.delete(name);
      forget?.(name);
    }
    return registry;
  }

  private state(ref: DependencyRef): DependencyState {
    const key = this.keys.dependency(ref.namespace, ref.dependency).breaker;
    let state = this.dependencies.get(key);
    if (!state) {
      state = {
        budget: new SlidingWindowCounter<BudgetField>(['requests', 'retries']),
        outcomes: new SlidingWindowCounter<OutcomeField>(['successes', 'failures', 'slow']),
        reporters: new Map(),
        activeReporters: new Map(),
        breaker: { ...CLOSED_BREAKER },
        probes: new Map(),
        rateTat: null,
        leases: new Map(),
        latency: new SlidingWindowCounter<string>(LATENCY_FIELDS),
      };
      this.dependencies.set(key, state);
    }
    return state;
  }

  private settle(ref: DependencyRef, state: DependencyState, now: number): BreakerMachine {
    const machine = new BreakerMachine(state.breaker).settle(now);
    this.commit(ref, state, machine);
    return machine;
  }

  /** Stores the machine's record, drops probe leases once no longer half-open, and publishes. */
  private commit(ref: DependencyRef, state: DependencyState, machine: BreakerMachine): BreakerSnapshot {
    state.breaker = machine.record;
    if (state.breaker.state !== 'half_open') state.probes.clear();
    for (const transition of machine.transitions)
      this.publishBreaker(ref, state.breaker, transition.from, transition.to);
    return snapshot(machine);
  }

  private publishBreaker(
    ref: DependencyRef,
    record: BreakerRecord,
    from: BreakerRecord['state'],
    to = record.state,
  ): void {
    this.publish(this.keys.dependency(ref.namespace, ref.dependency).events, {
      type: 'breaker',
      dep: ref.dependency,
      from,
      state: to,
      since: record.since ?? 0,
      openUntil: record.openUntil,
    });
  }

  private subscribe(channel: string, handler: EventHandler): Unsubscribe {
    let handlers = this.handlers.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.handlers.set(channel, handlers);
    }
    handlers.add(handler);
    return async () => {
      handlers.delete(handler);
      if (handlers.size === 0) this.handlers.delete(channel);
    };
  }

  private publish(channel: string, event: StoreEvent): void {
    const handlers = this.handlers.get(channel);
    if (!handlers) return;
    // Delivered asynchronously, as pub/sub is.
    queueMicrotask(() => handlers.forEach((handler) => handler(event)));
  }
}

function snapshot(machine: BreakerMachine): BreakerSnapshot {
  return { record: { ...machine.record }, transitions: [...machine.transitions] };
}

/** Counter names of the latency window: one per fixed bucket, as in lua/includes/latency.lua. */
const LATENCY_FIELDS = Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => `l${i + 1}`);

function latencyDelta(counts: number[]): Record<string, number> {
  return Object.fromEntries(LATENCY_FIELDS.map((field, i) => [field, counts[i] ?? 0]));
}

/** The fleet's p99 latency over the window; 0 while nothing is known. */
function fleetP99(state: DependencyState, second: number, windowSeconds: number): number {
  const totals = state.latency.sum(second, windowSeconds);
  return (
    latencyQuantile(
      LATENCY_FIELDS.map((field) => totals[field]),
      0.99,
    ) ?? 0
  );
}

function clearWindow(state: DependencyState): void {
  state.outcomes.clear();
  state.reporters.clear();
  state.probes.clear();
}

/** Drops the entries whose time (an expiry, or a last sighting moved by the window) is at or before `cutoff`. */
function pruneExpired(entries: Map<string, number>, cutoff: number): void {
  for (const [key, at] of entries) if (at <= cutoff) entries.delete(key);
}

function withoutSequence({ seq: _seq, ...entry }: StoredDeadLetter & { seq: number }): StoredDeadLetter {
  return entry;
}
