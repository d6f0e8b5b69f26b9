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
  /**
   * Caller-chosen id: a grant is kept under it (retryOutcomeTtlMs: at least 60 s, at least the
   * budget window), and a repeat answers that grant, its delay and budget, counting no second
   * retry. A denial is not kept: a repeat of one is decided again.
   */
  requestId?: string;
}

export type RetryBudgetVerdict = 'granted' | 'budget_exhausted' | 'deadline_exceeded' | 'breaker_open';

export interface RetryBudgetOutcome {
  verdict: RetryBudgetVerdict;
  /** The backoff the decision was made with: the request's, or for a repeat the first grant's. */
  delayMs: number;
  /** The budget after the decision (for a repeat: after the first grant). */
  budget: BudgetView;
  breaker: BreakerSnapshot;
}

/** A recorded batch: the breaker after it, and how many reporters the fleet has now. */
export interface RecordedOutcomes {
  breaker: BreakerSnapshot;
  /** Distinct reporters that reported in the budget window, this one included. */
  reporters: number;
}

export interface OutcomeBatch {
  reporter: string;
  /** First attempts: the budget's deposits. */
  requests: number;
  successes: number;
  failures: number;
  slow: number;
  /** Retries made without the fleet's grant (a client's local fallback): charged to the budget. */
  retries?: number;
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
  /**
   * Caller-chosen id: a grant is kept under it (admitOutcomeTtlMs: at least 60 s, at least the
   * lease's and the probe's life), and a repeat answers that grant with its probe token and lease
   * id (not this request's), taking nothing twice. A refusal is not kept: a repeat of one is
   * decided again.
   */
  requestId?: string;
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

/** A capped registry's terms: of dependencies in a namespace, or of namespaces. */
export interface DependencyRegistration {
  /** Most distinct names the registry may hold. */
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
/** One idempotency key of one namespace. */
export interface IdempotencyRef {
  namespace: string;
  key: string;
}

export interface IdempotencyClaim {
  fingerprint: string;
  /** The fencing token the claim gets if it wins: random, made by the caller. */
  token: string;
  /**
   * Caller-chosen id of this claim, kept in the key's record: a claim again with it (and the same
   * fingerprint) while the lease runs answers `resumed` with the token it won, changing nothing.
   */
  claimId?: string;
  leaseMs: number;
  /** How long a completed key is kept after its completion. */
  retentionMs: number;
}

/**
 * What a claim found. `claimed`: the key was new; `recovered`: an in-flight key whose lease had
 * expired was taken over (with the new token); `resumed`: a repeat of the holder's own claim (same
 * `claimId`) while its lease runs, answered with the token, lease and `recovered` of that claim;
 * `completed`: the stored response (JSON text); `in_flight`: another holder's lease runs
 * `leaseRemainingMs` more; `mismatch`: the key was used with another fingerprint.
 */
export type IdempotencyClaimOutcome =
  | { outcome: 'claimed' | 'recovered'; leaseExpiresAt: number }
  | { outcome: 'resumed'; token: string; leaseExpiresAt: number; recovered: boolean }
  | { outcome: 'completed'; response: string }
  | { outcome: 'in_flight'; leaseRemainingMs: number }
  | { outcome: 'mismatch' };

export interface IdempotencyCompletion {
  token: string;
  /** The response to replay, as opaque text. */
  response: string;
}

/** `lease_lost`: the token is not (or no longer) the key's current one. */
export type IdempotencyCompletionOutcome = 'completed' | 'lease_lost';

/** `absent`: nothing to release (the key is unknown or expired). */
export type IdempotencyReleaseOutcome = 'released' | 'absent' | 'lease_lost';

export interface IdempotencyRecord {
  state: 'in_flight' | 'completed';
  createdAt: number;
  expiresAt: number;
  leaseExpiresAt?: number;
  completedAt?: number;
}

/** One queue of one namespace. */
export interface QueueRef {
  namespace: string;
  queue: string;
}

export interface DeadLetterRetention {
  /** How long a dead letter is kept. */
  retentionMs: number;
  /** Most dead letters one queue keeps; the oldest go first. */
  maxLength: number;
}

export interface DeliveryAttemptRecord {
  messageId: string;
  error: string | null;
  /** The message as JSON text, kept with the dead letter; null when not given. */
  payload: string | null;
  maxAttempts: number;
  /** How long a message's attempt count is kept after its last failure. */
  attemptRetentionMs: number;
  deadLetters: DeadLetterRetention;
  /**
   * The delivery this failure is for (a broker's delivery count, from 1), when the caller knows it:
   * the count becomes max(count, attempt), and an attempt at or below the count is a repeat that
   * changes nothing and answers the count as it stands. Absent: the count goes up by one.
   */
  attempt?: number;
}

export interface DeliveryAttemptOutcome {
  /** The attempt count after this call. */
  attempt: number;
  /** The message is parked (now, or already was). */
  deadLetter: boolean;
  /** True when this call parked it. */
  parkedNow: boolean;
  /** Dead letters in the queue after this call. */
  depth: number;
}

/** A dead letter as stored: the payload stays JSON text. */
export interface StoredDeadLetter {
  messageId: string;
  payload: string | null;
  error: string | null;
  attempts: number;
  deadLetteredAt: number;
  firstAttemptAt: number;
}

export interface DeadLetterPageRequest {
  limit: number;
  /** The `next` cursor of the previous page. */
  after?: string;
  retention: DeadLetterRetention;
}

export interface StoredDeadLetterPage {
  items: StoredDeadLetter[];
  next: string | null;
  depth: number;
}

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
  recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes>;

  /** Lets a call through a closed breaker, or hands out a half-open probe lease. */
  admit(ref: DependencyRef, request: AdmitRequest): Promise<AdmitOutcome>;

  /**
   * Takes `cost` from one key of a named rate limit. With a caller-chosen `requestId`, a granted
   * take is kept (takeOutcomeTtlMs: at least 60 s, at least the limit's period) and a repeat
   * answers it without taking again; a denial is not kept.
   */
  takeRateLimit(
    ref: RateLimitRef,
    policy: RateLimitPolicy,
    cost: number,
    requestId?: string,
  ): Promise<RateLimitOutcome>;

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

  /** Registers a namespace that is about to hold state; false when the deployment is at its cap. */
  registerNamespace(namespace: string, registration: DependencyRegistration): Promise<boolean>;

  /** The namespaces registered, by name. */
  listNamespaces(retentionMs: number): Promise<string[]>;

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
  /** Claims an idempotency key, or tells why not: completed, in flight or another fingerprint. */
  claimIdempotencyKey(ref: IdempotencyRef, claim: IdempotencyClaim): Promise<IdempotencyClaimOutcome>;

  /** Stores the response of a claimed key; only its current token may. Kept `retentionMs` from now. */
  completeIdempotencyKey(ref: IdempotencyRef, completion: IdempotencyCompletion): Promise<IdempotencyCompletionOutcome>;

  /** Forgets an in-flight key whose work did not happen; only its current token may. */
  releaseIdempotencyKey(ref: IdempotencyRef, token: string): Promise<IdempotencyReleaseOutcome>;

  /** The key's state and times, or null when unknown. */
  readIdempotencyKey(ref: IdempotencyRef): Promise<IdempotencyRecord | null>;

  /** Counts one failed delivery; the failure of attempt `maxAttempts` parks the message. */
  recordDeliveryAttempt(ref: QueueRef, attempt: DeliveryAttemptRecord): Promise<DeliveryAttemptOutcome>;

  /** The message is done: its attempt count is forgotten. False when there was none. */
  ackDelivery(ref: QueueRef, messageId: string): Promise<boolean>;

  /** A page of dead letters, oldest first (pruning those past their retention). */
  listDeadLetters(ref: QueueRef, page: DeadLetterPageRequest): Promise<StoredDeadLetterPage>;

  /** Removes a dead letter and resets its message's attempt count; null when unknown. */
  redriveDeadLetter(ref: QueueRef, messageId: string): Promise<StoredDeadLetter | null>;

  /** Deletes a dead letter and its message's attempt count; false when unknown. */
  purgeDeadLetter(ref: QueueRef, messageId: string): Promise<boolean>;

  /** How many dead letters the queue holds (pruning those past their retention). */
  countDeadLetters(ref: QueueRef, retention: DeadLetterRetention): Promise<number>;

  /** Resolves when the store answers. */
  ping(): Promise<void>;

  /** Resolves once connected; rejects with StoreUnavailableError after `timeoutMs`. */
  waitUntilReady(timeoutMs: number): Promise<void>;

  close(): Promise<void>;
}
