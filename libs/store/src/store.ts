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

  /** Resolves when the store answers. */
  ping(): Promise<void>;

  /** Resolves once connected; rejects with StoreUnavailableError after `timeoutMs`. */
  waitUntilReady(timeoutMs: number): Promise<void>;

  close(): Promise<void>;
}
