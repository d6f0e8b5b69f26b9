import type { BreakerRecord, BreakerTransition } from '@sluice/core';
import type {
  BreakerPolicy,
  BreakerState,
  BudgetView,
  ConcurrencyPolicy,
  ProbeOutcome,
  RateLimitPolicy,
  RetryBudgetPolicy,
} from '@sluice/protocol';

/** Which resource of which namespace an operation is about. */
export interface DependencyRef {
  namespace: string;
  dependency: string;
}

/** A breaker after an operation, with the transitions that operation made (at most one call makes each). */
export interface BreakerSnapshot {
  record: BreakerRecord;
  transitions: BreakerTransition[];
}

export interface RetryBudgetRequest {
  budget: RetryBudgetPolicy;
  /** The backoff the caller would wait before this retry. */
  delayMs: number;
  /** The caller's remaining deadline; absent when it has none. */
  deadlineMs?: number;
  /** The window the fleet's latency percentiles cover: the breaker window (10 s by default). */
  latencyWindowSeconds?: number;
}

export type RetryBudgetVerdict = 'granted' | 'budget_exhausted' | 'deadline_exceeded' | 'breaker_open';

export interface RetryBudgetOutcome {
  verdict: RetryBudgetVerdict;
  /** The budget after the decision. */
  budget: BudgetView;
  breaker: BreakerSnapshot;
}

export interface OutcomeBatch {
  reporter: string;
  /** First attempts: the budget's deposits. */
  requests: number;
  successes: number;
  failures: number;
  slow: number;
  probes: ProbeOutcome[];
  /** Latency counts on the fixed bounds (LATENCY_BOUNDS_MS, plus the overflow bucket). */
  latency?: number[];
}

export interface OutcomePolicy {
  budgetWindowSeconds: number;
  breaker: BreakerPolicy;
}

export interface OutcomeTotals {
  successes: number;
  failures: number;
  slow: number;
}

export interface AdmitRequest {
  breaker: BreakerPolicy;
  /** The token this call's probe lease gets, if it becomes the half-open probe. */
  probeToken: string;
  rateLimit: RateLimitPolicy | null;
  /** What the call costs against the rate limit. */
  cost: number;
  concurrency: ConcurrencyPolicy | null;
  /** The id this call's concurrency lease gets, if the policy has a concurrency limit. */
  leaseId: string;
}

export interface AdmitOutcome {
  verdict: 'granted' | 'breaker_open' | 'rate_limited' | 'concurrency_limited';
  /** Present when this call is the half-open probe. */
  probe?: { token: string; expiresAt: number };
  /** Present when the call holds a concurrency lease. */
  lease?: { id: string; expiresAt: number };
  /** When a refused call may try again; null when unknown (forced open until reset). */
  retryAfterMs: number | null;
  /** Concurrency leases held after the decision; null without a concurrency limit. */
  leasesInUse: number | null;
  breaker: BreakerSnapshot;
}

/** One key of a named rate limit. */
export interface RateLimitRef {
  namespace: string;
  limit: string;
  key: string;
}

export interface RateLimitOutcome {
  allow: boolean;
  /** The burst. */
  limit: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
}

export interface LeaseOutcome {
  /** The lease's new expiry; null for an unknown or expired lease. */
  expiresAt: number | null;
  leasesInUse: number;
}

export type BreakerAction =
  | { action: 'trip'; reason: string; durationMs?: number }
  | { action: 'force_close'; reason: string; durationMs?: number }
  | { action: 'reset'; reason?: string };

export interface DependencyReadPolicy {
  budget: RetryBudgetPolicy;
  outcomeWindowSeconds: number;
}

export interface DependencySnapshot {
  budget: BudgetView;
  outcomes: OutcomeTotals;
  /** Latency counts on the fixed bounds over the breaker window. */
  latency: number[];
  breaker: BreakerSnapshot;
}

export interface DependencyRegistration {
  /** Most distinct dependencies one namespace may hold. */
  cap: number;
  /** A dependency unused this long is forgotten. */
  retentionMs: number;
}

/** What travels on a dependency's or a namespace's event channel. */
export type StoreEvent =
  | { type: 'breaker'; dep: string; from: BreakerState; state: BreakerState; since: number; openUntil: number | null }
  | { type: 'dependency'; dep: string }
  | { type: 'policy'; kind: PolicyKind; name: string };

/** The policy documents a namespace holds: its default, and one per dependency, named limit or queue. */
export type PolicyKind = 'default' | 'dep' | 'limit' | 'queue';

export interface PolicyDocumentRef {
  kind: PolicyKind;
  /** The dependency, limit or queue; '' for the namespace default. */
  name: string;
}

export interface StoredPolicy extends PolicyDocumentRef {
  /** Grows on every write and delete: the document's ETag. */
  version: number;
  document: unknown;
}

/** Write only if the stored document has this version, or only if there is none. */
export type PolicyWriteCondition = { ifVersion: number } | { ifAbsent: true };

export type PolicyWriteOutcome =
  | { outcome: 'written'; version: number }
  | { outcome: 'precondition_failed'; version: number }
  | { outcome: 'not_found' };

/** The audit log keeps about this many entries. */
export const AUDIT_ENTRIES_KEPT = 10_000;

export interface AuditRecord {
  actor: string;
  action: string;
  namespace: string;
  target: string;
  reason: string | null;
}

export interface AuditEntry extends AuditRecord {
  /** When it was recorded (epoch ms, the store's clock). */
  at: number;
}

export type EventHandler = (event: StoreEvent) => void;
export type Unsubscribe = () => Promise<void>;

/**
 * The seam between Sluice's features and its state. Every method is one atomic operation:
 * one Lua script call on Redis, one synchronous step in memory. Failures to reach the state
 * are thrown as StoreUnavailableError; decisions are returned as values.
 */
export interface Store {
  readonly kind: 'redis' | 'memory';

  /** Checks the breaker, the deadline and the budget, and counts the retry when granted. */
  decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome>;

  /** Adds one reporter's batch (deposits, outcomes, probe outcomes) and runs the breaker on it. */
  recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<BreakerSnapshot>;

  /** Lets a call through a closed breaker, or hands out a half-open probe lease. */
  admit(ref: DependencyRef, request: AdmitRequest): Promise<AdmitOutcome>;

  /** Takes `cost` from one key of a named rate limit. */
  takeRateLimit(ref: RateLimitRef, policy: RateLimitPolicy, cost: number): Promise<RateLimitOutcome>;

  /** Releases a concurrency lease; released is false for an unknown or expired lease. */
  releaseLease(ref: DependencyRef, leaseId: string): Promise<{ released: boolean; leasesInUse: number }>;

  /** Extends a live concurrency lease by `leaseMs` from now. */
  renewLease(ref: DependencyRef, leaseId: string, leaseMs: number): Promise<LeaseOutcome>;

  /** An operator's trip, force-close or reset. */
  setBreaker(ref: DependencyRef, action: BreakerAction): Promise<BreakerSnapshot>;

  /** The budget, the outcome totals and the breaker. */
  readDependency(ref: DependencyRef, policy: DependencyReadPolicy): Promise<DependencySnapshot>;

  /** Registers a dependency in its namespace; false when the namespace is at its cap. */
  registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean>;

  /** The dependencies registered in a namespace, by name. */
  listDependencies(namespace: string, retentionMs: number): Promise<string[]>;

  /** Every policy document of a namespace. */
  readPolicies(namespace: string): Promise<StoredPolicy[]>;

  /** Writes (or with `document` null deletes) one policy document, and tells every instance. */
  writePolicy(
    namespace: string,
    ref: PolicyDocumentRef,
    document: unknown,
    condition?: PolicyWriteCondition,
  ): Promise<PolicyWriteOutcome>;

  /** Appends an operator's action to the audit log; returns its time. */
  appendAudit(record: AuditRecord): Promise<number>;

  /** The latest `limit` audit entries (of one namespace when given), oldest first. */
  readAudit(query: { namespace?: string; limit: number }): Promise<AuditEntry[]>;

  /** Calls `handler` for every event of one dependency until unsubscribed. */
  subscribeDependency(ref: DependencyRef, handler: EventHandler): Promise<Unsubscribe>;

  /** Calls `handler` for every event of a namespace (new dependencies, policy changes). */
  subscribeNamespace(namespace: string, handler: EventHandler): Promise<Unsubscribe>;

  /** Resolves when the store answers. */
  ping(): Promise<void>;

  /** Resolves once connected; rejects with StoreUnavailableError after `timeoutMs`. */
  waitUntilReady(timeoutMs: number): Promise<void>;

  close(): Promise<void>;
}
