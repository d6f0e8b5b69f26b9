import type { BudgetView, RetryBudgetPolicy } from '@sluice/protocol';

/** Which resource of which namespace an operation is about. */
export interface DependencyRef {
  namespace: string;
  dependency: string;
}

export interface RetryBudgetRequest {
  budget: RetryBudgetPolicy;
  /** The backoff the caller would wait before this retry. */
  delayMs: number;
  /** The caller's remaining deadline; absent when it has none. */
  deadlineMs?: number;
}

export type RetryBudgetVerdict = 'granted' | 'budget_exhausted' | 'deadline_exceeded';

export interface RetryBudgetOutcome {
  verdict: RetryBudgetVerdict;
  /** The budget after the decision. */
  budget: BudgetView;
}

export interface OutcomeBatch {
  /** First attempts: the budget's deposits. */
  requests: number;
  successes: number;
  failures: number;
  slow: number;
}

export interface OutcomeWindows {
  budgetWindowSeconds: number;
  outcomeWindowSeconds: number;
}

export interface OutcomeTotals {
  successes: number;
  failures: number;
  slow: number;
}

export interface DependencyReadWindows {
  budget: RetryBudgetPolicy;
  outcomeWindowSeconds: number;
}

export interface DependencySnapshot {
  budget: BudgetView;
  outcomes: OutcomeTotals;
}

export interface DependencyRegistration {
  /** Most distinct dependencies one namespace may hold. */
  cap: number;
  /** A dependency unused this long is forgotten. */
  retentionMs: number;
}

/** One idempotency key of one namespace. */
export interface IdempotencyRef {
  namespace: string;
  key: string;
}

export interface IdempotencyClaim {
  fingerprint: string;
  /** The fencing token the claim gets if it wins: random, made by the caller. */
  token: string;
  leaseMs: number;
  /** How long a completed key is kept after its completion. */
  retentionMs: number;
}

/**
 * What a claim found. `claimed`: the key was new; `recovered`: an in-flight key whose lease had
 * expired was taken over (with the new token); `completed`: the stored response (JSON text);
 * `in_flight`: another holder's lease runs `leaseRemainingMs` more; `mismatch`: the key was used
 * with another fingerprint.
 */
export type IdempotencyClaimOutcome =
  | { outcome: 'claimed' | 'recovered'; leaseExpiresAt: number }
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

  /** Checks the deadline and the budget and counts the retry when granted. */
  decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome>;

  /** Adds one reporter's batch: deposits into the budget, outcomes into the outcome window. */
  recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, windows: OutcomeWindows): Promise<OutcomeTotals>;

  /** The budget and the outcome totals over their windows. */
  readDependency(ref: DependencyRef, windows: DependencyReadWindows): Promise<DependencySnapshot>;

  /** Registers a dependency in its namespace; false when the namespace is at its cap. */
  registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean>;

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
