import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { LATENCY_BOUNDS_MS, type BreakerRecord, type BreakerTransition } from '@sluice/core';
import {
  DEFAULT_DEPENDENCY_POLICY,
  type BreakerPolicy,
  type BreakerState,
  type RateLimitPolicy,
} from '@sluice/protocol';
import { StoreUnavailableError } from '../errors';
import { SluiceKeys } from '../keys';
import { admitOutcomeTtlMs, retryOutcomeTtlMs, takeOutcomeTtlMs } from '../request-outcomes';
import { AUDIT_ENTRIES_KEPT } from '../store';
import type {
  AuditEntry,
  AuditRecord,
  PolicyDocumentRef,
  PolicyKind,
  PolicyWriteCondition,
  PolicyWriteOutcome,
  StoredPolicy,
  AdmitOutcome,
  AdmitRequest,
  BreakerAction,
  BreakerSnapshot,
  RecordedOutcomes,
  DependencyReadPolicy,
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
  RetryBudgetVerdict,
  Store,
  Unsubscribe,
} from '../store';
import type { RedisClient } from './connection';
import { RedisEventSubscriber } from './event-subscriber';
import { ReplyDeadline } from './reply-deadline';
import { SCRIPTS, loadScript, type ScriptName } from './scripts';

type ScriptArgument = string | number;
type ScriptCommand = (...args: ScriptArgument[]) => Promise<unknown>;
type Reply = Array<string | number>;

const ADMIT_VERDICTS: Record<number, AdmitOutcome['verdict']> = {
  1: 'granted',
  3: 'breaker_open',
  4: 'rate_limited',
  5: 'concurrency_limited',
};

const RETRY_VERDICTS: Record<number, RetryBudgetVerdict> = {
  1: 'granted',
  2: 'budget_exhausted',
  3: 'deadline_exceeded',
  4: 'breaker_open',
};

/** The breaker policy as scripts read it (breakerPolicy() in lua/includes/breaker.lua), in order. */
export function breakerPolicyArgs(policy: BreakerPolicy): number[] {
  return [
    policy.failureRateThreshold,
    policy.slowCallRateThreshold,
    policy.minimumCalls,
    policy.windowSeconds,
    policy.openMs,
    policy.maxOpenMs,
    policy.halfOpenProbes,
    policy.closeAfterSuccesses,
    policy.probeLeaseMs,
    policy.minReporters,
  ];
}

/** Reads the breaker reply tail (breakerReply() in lua/includes/breaker.lua) starting at `offset`. */
function breakerFromReply(reply: Reply, offset: number): BreakerSnapshot {
  const nullable = (value: string | number) => (Number(value) < 0 ? null : Number(value));
  const record: BreakerRecord = {
    state: reply[offset] as BreakerState,
    since: nullable(reply[offset + 1]),
    openUntil: nullable(reply[offset + 2]),
    opens: 0,
    probeSuccesses: 0,
    reason: reply[offset + 3] === '' ? null : String(reply[offset + 3]),
  };
  const transitions: BreakerTransition[] = [];
  for (let i = offset + 4; i + 1 < reply.length; i += 2) {
    transitions.push({ from: reply[i] as BreakerState, to: reply[i + 1] as BreakerState });
  }
  return { record, transitions };
}

const RELEASE_OUTCOMES: Record<number, IdempotencyReleaseOutcome> = { 0: 'lease_lost', 1: 'released', 2: 'absent' };

export interface RedisStoreOptions {
  client: RedisClient;
  /** A connection for sharded pub/sub; without one, subscribing fails. */
  subscriber?: RedisClient;
  keys?: SluiceKeys;
  /** Most time one operation may take before it fails as StoreUnavailableError. */
  timeoutMs: number;
}

/** The Store on Redis (standalone or Cluster): each method is one Lua script call. */
export class RedisStore implements Store {
  readonly kind = 'redis';
  private readonly keys: SluiceKeys;
  private readonly events?: RedisEventSubscriber;
  private readonly deadline: ReplyDeadline;

  constructor(private readonly options: RedisStoreOptions) {
    this.keys = options.keys ?? new SluiceKeys();
    this.deadline = new ReplyDeadline(options.timeoutMs);
    this.events = options.subscriber ? new RedisEventSubscriber(options.subscriber) : undefined;
    for (const [name, { numberOfKeys }] of Object.entries(SCRIPTS)) {
      options.client.defineCommand(name, { lua: loadScript(name as ScriptName), numberOfKeys });
    }
  }

  get client(): RedisClient {
    return this.options.client;
  }

  async decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const { budget } = request;
    const reply = await this.run(
      'decide_retry',
      keys.budget,
      keys.breaker,
      keys.latency,
      this.keys.dependencyRequests(ref.namespace, ref.dependency).retry(request.requestId),
      budget.ratio,
      budget.minRetriesPerSecond,
      budget.windowSeconds,
      request.delayMs,
      request.deadlineMs ?? -1,
      keys.events,
      ref.dependency,
      request.latencyWindowSeconds ?? DEFAULT_DEPENDENCY_POLICY.breaker.windowSeconds,
      request.requestId ?? '',
      retryOutcomeTtlMs(budget.windowSeconds),
    );
    const [code, retries, requests, limit, delayMs] = reply.map(Number);
    return {
      verdict: RETRY_VERDICTS[code],
      delayMs,
      budget: { retries, requests, limit, windowSeconds: budget.windowSeconds },
      breaker: breakerFromReply(reply, 5),
    };
  }

  async recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const probes = batch.probes.flatMap((probe) => [probe.token, probe.success ? 1 : 0]);
    const reply = await this.run(
      'record_outcomes',
      keys.budget,
      keys.outcomes,
      keys.breaker,
      keys.reporters,
      keys.probes,
      keys.latency,
      keys.activeReporters,
      batch.requests,
      batch.successes,
      batch.failures,
      batch.slow,
      policy.budgetWindowSeconds,
      batch.reporter,
      keys.events,
      ref.dependency,
      ...breakerPolicyArgs(policy.breaker),
      batch.retries ?? 0,
      batch.latency?.length ?? 0,
      ...(batch.latency ?? []),
      ...probes,
    );
    return { reporters: Number(reply[0]), breaker: breakerFromReply(reply, 1) };
  }

  async admit(ref: DependencyRef, request: AdmitRequest): Promise<AdmitOutcome> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const { rateLimit, concurrency } = request;
    const reply = await this.run(
      'admit',
      keys.breaker,
      keys.probes,
      keys.rate,
      keys.leases,
      this.keys.dependencyRequests(ref.namespace, ref.dependency).admit(request.requestId),
      request.probeToken,
      request.breaker.halfOpenProbes,
      request.breaker.probeLeaseMs,
      keys.events,
      ref.dependency,
      rateLimit?.rate ?? 0,
      rateLimit?.periodMs ?? 0,
      rateLimit?.burst ?? 0,
      request.cost,
      concurrency?.limit ?? 0,
      concurrency?.leaseMs ?? 0,
      request.leaseId,
      request.requestId ?? '',
      admitOutcomeTtlMs(concurrency?.leaseMs ?? 0, request.breaker.probeLeaseMs),
    );
    const [code, probeExpiresAt, leaseExpiresAt, retryAfterMs, inUse] = reply.map(Number);
    // The token and id come from the reply: a repeat answers the kept grant's, not this request's.
    const [probeToken, leaseId] = [String(reply[5]), String(reply[6])];
    return {
      verdict: ADMIT_VERDICTS[code],
      ...(probeExpiresAt >= 0 ? { probe: { token: probeToken, expiresAt: probeExpiresAt } } : {}),
      ...(leaseExpiresAt >= 0 ? { lease: { id: leaseId, expiresAt: leaseExpiresAt } } : {}),
      retryAfterMs: retryAfterMs >= 0 ? retryAfterMs : code === 1 ? 0 : null,
      leasesInUse: inUse >= 0 ? inUse : null,
      breaker: breakerFromReply(reply, 7),
    };
  }

  async takeRateLimit(
    ref: RateLimitRef,
    policy: RateLimitPolicy,
    cost: number,
    requestId?: string,
  ): Promise<RateLimitOutcome> {
    const reply = await this.run(
      'take_rate_limit',
      this.keys.rateLimit(ref.namespace, ref.limit, ref.key),
      this.keys.rateLimitRequest(ref.namespace, ref.limit, ref.key, requestId),
      policy.rate,
      policy.periodMs,
      policy.burst,
      cost,
      requestId ?? '',
      takeOutcomeTtlMs(policy.periodMs),
    );
    const [allowed, remaining, retryAfterMs, resetMs] = reply.map(Number);
    return { allow: allowed === 1, limit: policy.burst, remaining, retryAfterMs, resetMs };
  }

  async releaseLease(ref: DependencyRef, leaseId: string): Promise<{ released: boolean; leasesInUse: number }> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const [released, inUse] = (await this.run('release_lease', keys.leases, leaseId)).map(Number);
    return { released: released === 1, leasesInUse: inUse };
  }

  async renewLease(ref: DependencyRef, leaseId: string, leaseMs: number): Promise<LeaseOutcome> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const [expiresAt, inUse] = (await this.run('renew_lease', keys.leases, leaseId, leaseMs)).map(Number);
    return { expiresAt: expiresAt >= 0 ? expiresAt : null, leasesInUse: inUse };
  }

  async setBreaker(ref: DependencyRef, action: BreakerAction): Promise<BreakerSnapshot> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const reply = await this.run(
      'set_breaker',
      keys.breaker,
      keys.outcomes,
      keys.reporters,
      keys.probes,
      action.action,
      action.action === 'reset' ? -1 : (action.durationMs ?? -1),
      action.action === 'reset' ? '' : action.reason,
      keys.events,
      ref.dependency,
    );
    return breakerFromReply(reply, 0);
  }

  async readDependency(ref: DependencyRef, policy: DependencyReadPolicy): Promise<DependencySnapshot> {
    const keys = this.keys.dependency(ref.namespace, ref.dependency);
    const { budget } = policy;
    const reply = await this.run(
      'read_dependency',
      keys.budget,
      keys.outcomes,
      keys.breaker,
      keys.latency,
      budget.ratio,
      budget.minRetriesPerSecond,
      budget.windowSeconds,
      policy.outcomeWindowSeconds,
      keys.events,
      ref.dependency,
    );
    const [retries, requests, limit, successes, failures, slow] = reply.map(Number);
    const latencyEnd = 6 + LATENCY_BOUNDS_MS.length + 1;
    return {
      budget: { retries, requests, limit, windowSeconds: budget.windowSeconds },
      outcomes: { successes, failures, slow },
      latency: reply.slice(6, latencyEnd).map(Number),
      breaker: breakerFromReply(reply, latencyEnd),
    };
  }

  async registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean> {
    const keys = this.keys.namespace(ref.namespace);
    return this.registerName(keys.dependencies, ref.dependency, registration, keys.events);
  }

  async listDependencies(namespace: string, retentionMs: number): Promise<string[]> {
    return this.listNames(this.keys.namespace(namespace).dependencies, retentionMs);
  }

  async registerNamespace(namespace: string, registration: DependencyRegistration): Promise<boolean> {
    return this.registerName(this.keys.namespaces(), namespace, registration, '');
  }

  async listNamespaces(retentionMs: number): Promise<string[]> {
    return this.listNames(this.keys.namespaces(), retentionMs);
  }

  private async registerName(
    registry: string,
    name: string,
    registration: DependencyRegistration,
    channel: string,
  ): Promise<boolean> {
    const reply = await this.run('register_name', registry, name, registration.cap, registration.retentionMs, channel);
    return Number(reply) === 1;
  }

  private async listNames(registry: string, retentionMs: number): Promise<string[]> {
    return (await this.run('list_names', registry, retentionMs)).map(String);
  }

  async readPolicies(namespace: string): Promise<StoredPolicy[]> {
    const reply = await this.run('read_policies', this.keys.namespace(namespace).policies);
    const policies: StoredPolicy[] = [];
    for (let i = 0; i + 3 < reply.length; i += 4) {
      policies.push({
        kind: reply[i] as PolicyKind,
        name: String(reply[i + 1]),
        version: Number(reply[i + 2]),
        document: JSON.parse(String(reply[i + 3])),
      });
    }
    return policies;
  }

  async writePolicy(
    namespace: string,
    ref: PolicyDocumentRef,
    document: unknown,
    condition?: PolicyWriteCondition,
  ): Promise<PolicyWriteOutcome> {
    const keys = this.keys.namespace(namespace);
    const [code, version] = (
      await this.run(
        'write_policy',
        keys.policies,
        ref.kind,
        ref.name,
        document === null ? '' : JSON.stringify(document),
        !condition ? '' : 'ifAbsent' in condition ? 'absent' : condition.ifVersion,
        keys.events,
      )
    ).map(Number);
    if (code === 3) return { outcome: 'not_found' };
    return { outcome: code === 1 ? 'written' : 'precondition_failed', version };
  }

  async appendAudit(record: AuditRecord): Promise<number> {
    const at = await this.run(
      'append_audit',
      this.keys.audit(),
      AUDIT_ENTRIES_KEPT,
      record.actor,
      record.action,
      record.namespace,
      record.target,
      record.reason ?? '',
    );
    return Number(at);
  }

  async readAudit(query: { namespace?: string; limit: number }): Promise<AuditEntry[]> {
    const reply = await this.run('read_audit', this.keys.audit(), query.namespace ?? '', query.limit);
    const entries: AuditEntry[] = [];
    for (let i = 0; i + 5 < reply.length; i += 6) {
      entries.push({
        at: Number(reply[i]),
        actor: String(reply[i + 1]),
        action: String(reply[i + 2]),
        namespace: String(reply[i + 3]),
        target: String(reply[i + 4]),
        reason: reply[i + 5] === '' ? null : String(reply[i + 5]),
      });
    }
    return entries;
  }

  subscribeDependency(ref: DependencyRef, handler: EventHandler): Promise<Unsubscribe> {
    return this.subscribe(this.keys.dependency(ref.namespace, ref.dependency).events, handler);
  }

  subscribeNamespace(namespace: string, handler: EventHandler): Promise<Unsubscribe> {
    return this.subscribe(this.keys.namespace(namespace).events, handler);
  }

  async claimIdempotencyKey(ref: IdempotencyRef, claim: IdempotencyClaim): Promise<IdempotencyClaimOutcome> {
    const [code, value, token, recovered] = await this.run<[number, number | string | undefined, string, number]>(
      'claim_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      claim.fingerprint,
      claim.token,
      claim.leaseMs,
      claim.retentionMs,
      claim.claimId ?? '',
    );
    switch (code) {
      case 6:
        return { outcome: 'resumed', token, leaseExpiresAt: Number(value), recovered: recovered === 1 };
      case 1:
        return { outcome: 'claimed', leaseExpiresAt: Number(value) };
      case 2:
        return { outcome: 'recovered', leaseExpiresAt: Number(value) };
      case 3:
        return { outcome: 'completed', response: String(value) };
      case 4:
        return { outcome: 'in_flight', leaseRemainingMs: Number(value) };
      default:
        return { outcome: 'mismatch' };
    }
  }

  async completeIdempotencyKey(
    ref: IdempotencyRef,
    completion: IdempotencyCompletion,
  ): Promise<IdempotencyCompletionOutcome> {
    const reply = await this.run<number>(
      'complete_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      completion.token,
      completion.response,
    );
    return reply === 1 ? 'completed' : 'lease_lost';
  }

  async releaseIdempotencyKey(ref: IdempotencyRef, token: string): Promise<IdempotencyReleaseOutcome> {
    const reply = await this.run<number>(
      'release_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
      token,
    );
    return RELEASE_OUTCOMES[reply];
  }

  async readIdempotencyKey(ref: IdempotencyRef): Promise<IdempotencyRecord | null> {
    const reply = await this.run<[IdempotencyRecord['state'], number, number, number, number] | []>(
      'read_idempotency_key',
      this.keys.idempotency(ref.namespace, ref.key).record,
    );
    if (reply.length === 0) return null;
    const [state, createdAt, expiresAt, leaseExpiresAt, completedAt] = reply;
    return {
      state,
      createdAt,
      expiresAt,
      ...(leaseExpiresAt >= 0 ? { leaseExpiresAt } : {}),
      ...(completedAt >= 0 ? { completedAt } : {}),
    };
  }

  async recordDeliveryAttempt(ref: QueueRef, attempt: DeliveryAttemptRecord): Promise<DeliveryAttemptOutcome> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    const [count, deadLetter, parkedNow, depth] = await this.run<number[]>(
      'record_delivery_attempt',
      this.keys.deliveryAttempts(ref.namespace, ref.queue, attempt.messageId),
      queue.deadLetters,
      queue.deadLetterIndex,
      attempt.messageId,
      attempt.maxAttempts,
      attempt.error ?? '',
      attempt.payload ?? '',
      attempt.attemptRetentionMs,
      attempt.deadLetters.retentionMs,
      attempt.deadLetters.maxLength,
      attempt.attempt ?? 0,
    );
    return { attempt: count, deadLetter: deadLetter === 1, parkedNow: parkedNow === 1, depth };
  }

  async ackDelivery(ref: QueueRef, messageId: string): Promise<boolean> {
    const reply = await this.run<number>(
      'ack_delivery',
      this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId),
    );
    return reply === 1;
  }

  async listDeadLetters(ref: QueueRef, page: DeadLetterPageRequest): Promise<StoredDeadLetterPage> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    const [depth, next, ...entries] = await this.run<[number, string, ...string[]]>(
      'list_dead_letters',
      queue.deadLetters,
      queue.deadLetterIndex,
      page.limit,
      page.after ?? '',
      page.retention.retentionMs,
      page.retention.maxLength,
    );
    return { items: entries.map(parseDeadLetter), next: next === '' ? null : next, depth };
  }

  async redriveDeadLetter(ref: QueueRef, messageId: string): Promise<StoredDeadLetter | null> {
    const entry = await this.run<string | null>(
      'redrive_dead_letter',
      ...this.deadLetterKeys(ref, messageId),
      messageId,
    );
    return entry === null ? null : parseDeadLetter(entry);
  }

  async purgeDeadLetter(ref: QueueRef, messageId: string): Promise<boolean> {
    return (await this.run<number>('purge_dead_letter', ...this.deadLetterKeys(ref, messageId), messageId)) === 1;
  }

  async countDeadLetters(ref: QueueRef, retention: DeadLetterRetention): Promise<number> {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    return this.run<number>(
      'count_dead_letters',
      queue.deadLetters,
      queue.deadLetterIndex,
      retention.retentionMs,
      retention.maxLength,
    );
  }

  async ping(): Promise<void> {
    await this.guard(this.options.client.ping());
  }

  async waitUntilReady(timeoutMs: number): Promise<void> {
    const { client } = this.options;
    if (client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        client.off('ready', onReady);
        reject(new StoreUnavailableError(`Redis was not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      client.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.events?.close();
    this.options.client.disconnect();
  }

  private subscribe(channel: string, handler: EventHandler): Promise<Unsubscribe> {
    if (!this.events) throw new Error('RedisStore was built without a subscriber connection');
    return this.events.subscribe(channel, handler);
  }

  private deadLetterKeys(ref: QueueRef, messageId: string): [string, string, string] {
    const queue = this.keys.queue(ref.namespace, ref.queue);
    return [queue.deadLetters, queue.deadLetterIndex, this.keys.deliveryAttempts(ref.namespace, ref.queue, messageId)];
  }

  private run<T = Reply>(script: ScriptName, ...args: ScriptArgument[]): Promise<T> {
    const command = (this.options.client as unknown as Record<ScriptName, ScriptCommand>)[script];
    return this.guard(command.apply(this.options.client, args) as Promise<T>, String(args[0]));
  }

  /** Bounds one operation by the store timeout and turns any failure into StoreUnavailableError. */
  private guard<T>(operation: Promise<T>, firstKey?: string): Promise<T> {
    return this.deadline.guard(operation, firstKey === undefined ? '' : this.connectionOf(firstKey));
  }

  /** The connection a key's commands travel on: the server, or the Cluster node owning its slot. */
  private connectionOf(key: string): string {
    const { client } = this.options;
    return client instanceof Cluster ? (client.slots[calculateSlot(key)]?.[0] ?? '') : '';
  }
}

/** An entry as the Lua scripts encode it (cjson). */
function parseDeadLetter(json: string): StoredDeadLetter {
  const entry = JSON.parse(json) as StoredDeadLetter;
  return {
    messageId: entry.messageId,
    payload: entry.payload ?? null,
    error: entry.error ?? null,
    attempts: entry.attempts,
    deadLetteredAt: entry.deadLetteredAt,
    firstAttemptAt: entry.firstAttemptAt,
  };
}
