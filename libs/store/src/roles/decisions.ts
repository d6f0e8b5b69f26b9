import type { AdmissionInput, OutcomeBatch, OutcomePolicy, RecordedOutcomes, RetryDecisionInput } from '@sluice/core';
import type { AdmitOutcome, RetryBudgetOutcome } from '@sluice/core';
import type { DependencyRef } from './common';

export type {
  AdmitOutcome,
  OutcomeBatch,
  OutcomePolicy,
  RecordedOutcomes,
  RetryBudgetOutcome,
  RetryBudgetVerdict,
} from '@sluice/core';

export interface RetryBudgetRequest extends Omit<RetryDecisionInput, 'latencyWindowSeconds'> {
  /** The window the fleet's latency percentiles cover: the breaker window (10 s by default). */
  latencyWindowSeconds?: number;
  /**
   * Caller-chosen id: a grant is kept under it (retryOutcomeTtlMs: at least 60 s, at least the
   * budget window), and a repeat answers that grant, its delay and budget, counting no second
   * retry. A denial is not kept: a repeat of one is decided again.
   */
  requestId?: string;
}

/** One ask of a batch: what differs between the asks for one dependency. */
export interface RetryAskInput extends Pick<RetryBudgetRequest, 'delayMs' | 'deadlineMs' | 'requestId'> {
  /** Already denied before the store (not_retriable, max_attempts, …): only the budget is read for it. */
  read?: boolean;
}

/** An ask's decision; `verdict` null for a `read` ask (its budget as read then, nothing decided). */
export interface RetryAskOutcome extends Omit<RetryBudgetOutcome, 'breaker' | 'verdict'> {
  verdict: RetryBudgetOutcome['verdict'] | null;
}

/** Retry asks for one dependency, decided in order in one atomic step. */
export interface RetryBatchRequest extends Omit<RetryBudgetRequest, 'delayMs' | 'deadlineMs' | 'requestId'> {
  asks: readonly RetryAskInput[];
}

/** One decision per ask, in order, and the breaker they were decided against (its transitions once). */
export interface RetryBatchOutcome {
  decisions: RetryAskOutcome[];
  breaker: RetryBudgetOutcome['breaker'];
}

export interface AdmitRequest extends AdmissionInput {
  /**
   * Caller-chosen id: a grant is kept under it (admitOutcomeTtlMs: at least 60 s, at least the
   * lease's and the probe's life), and a repeat answers that grant with its probe token and lease
   * id (not this request's), taking nothing twice. A refusal is not kept: a repeat of one is
   * decided again.
   */
  requestId?: string;
}

/** The decision path: what callers ask before a retry or a call, and what they report after. */
export interface DecisionStore {
  /** Checks the breaker, the deadline and the budget, and counts the retry when granted. */
  decideRetry(ref: DependencyRef, request: RetryBudgetRequest): Promise<RetryBudgetOutcome>;

  /**
   * Decides the asks in order, exactly as decideRetry would one by one (each sees the grants before
   * it): decide_retries-N.lua, one script call for the whole batch.
   */
  decideRetries(ref: DependencyRef, request: RetryBatchRequest): Promise<RetryBatchOutcome>;

  /** Adds one reporter's batch (deposits, outcomes, probe outcomes) and runs the breaker on it. */
  recordOutcomes(ref: DependencyRef, batch: OutcomeBatch, policy: OutcomePolicy): Promise<RecordedOutcomes>;

  /** Lets a call through a closed breaker, or hands out a half-open probe lease. */
  admit(ref: DependencyRef, request: AdmitRequest): Promise<AdmitOutcome>;
}
