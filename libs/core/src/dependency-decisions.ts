import {
  DEFAULT_DEPENDENCY_POLICY,
  type BreakerPolicy,
  type BudgetView,
  type ConcurrencyPolicy,
  type ProbeOutcome,
  type RateLimitPolicy,
  type RetryBudgetPolicy,
} from '@sluice/protocol';
import { BreakerMachine, CLOSED_BREAKER, blocksCalls } from './breaker';
import {
  breakerSnapshot,
  LONGEST_LEASE_MS,
  clampLeases,
  clearBreakerWindow,
  commitBreaker,
  forgetReportersBefore,
  noteReporter,
  pruneExpired,
  settleBreaker,
  type BreakerSnapshot,
  type DependencyState,
} from './dependency-state';
import { recordHistory } from './dependency-history';
import { gcraTake } from './gcra';
import { LATENCY_FIELDS, latencyQuantile } from './latency-histogram';
import { budgetRetryAfterMs, breakerRetryAfterMs } from './retry-after';
import { budgetView, retryFits } from './retry-budget';
import { epochSecond } from './sliding-window';

/**
 * The decisions on one dependency, as pure functions over its DependencyState (changed in place)
 * and the store's clock. The Lua twins are decide_retry-4.lua, admit-5.lua and record_outcomes-8.lua
 * in libs/store/src/redis/lua; the store conformance suite keeps them equal. Each returns the
 * breaker with the transitions it made, for the store to publish.
 */

export interface RetryDecisionInput {
  budget: RetryBudgetPolicy;
  /** The backoff the caller would wait before this retry. */
  delayMs: number;
  /** The caller's remaining deadline; absent when it has none. */
  deadlineMs?: number;
  /** The window the fleet's latency percentiles cover. */
  latencyWindowSeconds: number;
}

export type RetryBudgetVerdict = 'granted' | 'budget_exhausted' | 'deadline_exceeded' | 'breaker_open';

/** What a granted retry keeps for a repeat of its caller-chosen id. */
export interface KeptRetry {
  delayMs: number;
  budget: BudgetView;
}

export interface RetryBudgetOutcome extends KeptRetry {
  verdict: RetryBudgetVerdict;
  breaker: BreakerSnapshot;
  /**
   * On budget_exhausted and breaker_open: when the same ask could be granted if no new requests
   * were reported, ms (retry-after.ts); null otherwise, or when no time is known.
   */
  retryAfterMs: number | null;
}

/** The breaker, the deadline, then the budget; counts the retry when granted. `kept`: a repeat's first grant. */
export function decideRetry(
  state: DependencyState,
  input: RetryDecisionInput,
  now: number,
  kept?: KeptRetry,
): RetryBudgetOutcome {
  const second = epochSecond(now);
  const breaker = breakerSnapshot(settleBreaker(state, now));
  if (kept)
    return { verdict: 'granted', delayMs: kept.delayMs, budget: { ...kept.budget }, breaker, retryAfterMs: null };
  const { budget: policy, delayMs, deadlineMs } = input;
  const counts = state.budget.sum(second, policy.windowSeconds);
  let verdict: RetryBudgetVerdict = 'granted';
  if (blocksCalls(state.breaker.state)) verdict = 'breaker_open';
  else if (deadlineMs !== undefined && delayMs + fleetP99(state, second, input.latencyWindowSeconds) > deadlineMs) {
    verdict = 'deadline_exceeded';
  } else if (!retryFits(policy, counts.retries, counts.requests, counts.retriesSucceeded)) verdict = 'budget_exhausted';
  else state.budget.add(second, policy.windowSeconds, { retries: 1 });
  const counted = counts.retries + (verdict === 'granted' ? 1 : 0);
  let retryAfterMs: number | null = null;
  if (verdict === 'breaker_open') retryAfterMs = breakerRetryAfterMs(state.breaker, now);
  else if (verdict === 'budget_exhausted') {
    const seconds = state.budget
      .bucketsOf(second, policy.windowSeconds)
      .map(([at, counts]) => ({ second: at, ...counts }));
    retryAfterMs = budgetRetryAfterMs(policy, seconds, now);
  }
  return {
    verdict,
    delayMs,
    budget: budgetView(policy, { ...counts, retries: counted }),
    breaker,
    retryAfterMs,
  };
}

/**
 * The budget as an ask decided before the store reads it (twin of retryBudgetRead in
 * retry_ask.lua): the budget window alone, with the breaker settled. Nothing else is read, so no
 * other window is pruned to a window of its own.
 */
export function readRetryBudget(
  state: DependencyState | undefined,
  policy: RetryBudgetPolicy,
  now: number,
): { budget: BudgetView; breaker: BreakerSnapshot } {
  const breaker = breakerSnapshot(state ? settleBreaker(state, now) : new BreakerMachine({ ...CLOSED_BREAKER }));
  const counts = state?.budget.sum(epochSecond(now), policy.windowSeconds) ?? {
    requests: 0,
    retries: 0,
    retriesSucceeded: 0,
  };
  return { budget: budgetView(policy, counts), breaker };
}

export interface AdmissionInput {
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

/** What a granted admission keeps for a repeat of its caller-chosen id. */
export interface KeptAdmission {
  /** Present when this call is the half-open probe. */
  probe?: { token: string; expiresAt: number };
  /** Present when the call holds a concurrency lease. */
  lease?: { id: string; expiresAt: number };
  /** Concurrency leases held after the decision; null without a concurrency limit. */
  leasesInUse: number | null;
}

export interface AdmitOutcome extends KeptAdmission {
  verdict: 'granted' | 'breaker_open' | 'rate_limited' | 'concurrency_limited';
  /** When a refused call may try again; null when unknown (forced open until reset). */
  retryAfterMs: number | null;
  breaker: BreakerSnapshot;
}

/** The breaker (at most halfOpenProbes probe leases), the rate limit, then the concurrency limit; nothing taken unless all say yes. */
export function admit(state: DependencyState, input: AdmissionInput, now: number, kept?: KeptAdmission): AdmitOutcome {
  const breaker = breakerSnapshot(settleBreaker(state, now));
  if (kept) {
    const { probe, lease, leasesInUse } = kept;
    return {
      verdict: 'granted',
      ...(probe ? { probe: { ...probe } } : {}),
      ...(lease ? { lease: { ...lease } } : {}),
      retryAfterMs: 0,
      leasesInUse,
      breaker,
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
    breaker,
  });
  const untilFirst = (expiries: Map<string, number>) => Math.max(Math.min(...expiries.values()) - now, 0);
  // 1. The breaker.
  const asProbe = state.breaker.state === 'half_open';
  if (asProbe) {
    pruneExpired(state.probes, now);
    clampLeases(state.probes, now, input.breaker.probeLeaseMs, LONGEST_LEASE_MS.probe);
    if (state.probes.size >= input.breaker.halfOpenProbes) return refused('breaker_open', untilFirst(state.probes));
  } else if (blocksCalls(state.breaker.state)) {
    const { openUntil } = state.breaker;
    return refused('breaker_open', openUntil === null ? null : Math.max(openUntil - now, 0));
  }
  // 2. The rate limit, kept only if the call is admitted.
  const rate = input.rateLimit ? gcraTake(input.rateLimit, state.rateTat, now, input.cost) : undefined;
  if (rate && !rate.allow) {
    state.rateTat = rate.tat; // unchanged, but cut to a full burst if a clock step back left it further
    return refused('rate_limited', rate.retryAfterMs);
  }
  // 3. The concurrency limit.
  let lease: AdmitOutcome['lease'];
  if (input.concurrency) {
    pruneExpired(state.leases, now);
    clampLeases(state.leases, now, input.concurrency.leaseMs, LONGEST_LEASE_MS.concurrency);
    if (state.leases.size >= input.concurrency.limit) {
      return refused('concurrency_limited', untilFirst(state.leases), state.leases.size);
    }
    lease = { id: input.leaseId, expiresAt: now + input.concurrency.leaseMs };
    state.leases.set(lease.id, lease.expiresAt);
  }
  if (rate) state.rateTat = rate.tat;
  let probe: AdmitOutcome['probe'];
  if (asProbe) {
    probe = { token: input.probeToken, expiresAt: now + input.breaker.probeLeaseMs };
    state.probes.set(probe.token, probe.expiresAt);
  }
  return {
    verdict: 'granted',
    ...(probe ? { probe } : {}),
    ...(lease ? { lease } : {}),
    retryAfterMs: 0,
    leasesInUse: input.concurrency ? state.leases.size : null,
    breaker,
  };
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
  /** Retries (granted by the fleet or the local fallback) that succeeded: an adaptive budget gives their grants back. */
  retriesSucceeded?: number;
  probes: ProbeOutcome[];
  /** Latency counts on the fixed bounds (LATENCY_BOUNDS_MS, plus the overflow bucket). */
  latency?: number[];
  /**
   * The reporters of a batch merged from several reports (the coordinator's report merger), each
   * failing when its own report had failed or slow calls; absent: `reporter` alone, failing when
   * the batch has failed or slow calls.
   */
  reporters?: ReporterOfBatch[];
}

/** One reporter of a merged batch. */
export interface ReporterOfBatch {
  reporter: string;
  failing: boolean;
}

/** The reporters a batch counts for. */
export function reportersOf(batch: OutcomeBatch): ReporterOfBatch[] {
  return batch.reporters ?? [{ reporter: batch.reporter, failing: batch.failures + batch.slow > 0 }];
}

/** How a budget counts, without its window: what the history needs to keep each step's limit and cap. */
export type BudgetRule = Pick<RetryBudgetPolicy, 'mode' | 'ratio' | 'maxRatio' | 'minRetriesPerSecond'>;

export interface OutcomePolicy {
  budgetWindowSeconds: number;
  breaker: BreakerPolicy;
  /** The budget's rule, for the limit and cap the history keeps; absent: the default policy's. */
  budgetRule?: BudgetRule;
}

/** The budget policy a batch's history step is computed with: the rule over the budget window. */
export function outcomeBudgetPolicy(policy: OutcomePolicy): RetryBudgetPolicy {
  return {
    ...DEFAULT_DEPENDENCY_POLICY.retryBudget,
    ...policy.budgetRule,
    windowSeconds: policy.budgetWindowSeconds,
  };
}

/** A recorded batch: the breaker after it, and how many reporters the fleet has now. */
export interface RecordedOutcomes {
  breaker: BreakerSnapshot;
  /** Distinct reporters that reported in the budget window, this one included. */
  reporters: number;
}

/** Adds one reporter's batch (deposits, outcomes, probe outcomes, latency) and runs the breaker on it. */
export function recordOutcomes(
  state: DependencyState,
  batch: OutcomeBatch,
  policy: OutcomePolicy,
  now: number,
): RecordedOutcomes {
  const second = epochSecond(now);
  const { windowSeconds } = policy.breaker;
  const machine = new BreakerMachine(state.breaker).settle(now);
  pruneExpired(state.probes, now);
  for (const probe of batch.probes) {
    if (machine.record.state === 'half_open' && state.probes.delete(probe.token)) {
      machine.probeOutcome(policy.breaker, probe.success, now);
    }
  }
  if (batch.latency) {
    const counts = batch.latency;
    state.latency.add(second, windowSeconds, Object.fromEntries(LATENCY_FIELDS.map((f, i) => [f, counts[i] ?? 0])));
  }
  const retries = batch.retries ?? 0;
  const retriesSucceeded = batch.retriesSucceeded ?? 0;
  if (batch.requests + retries + retriesSucceeded > 0) {
    state.budget.add(second, policy.budgetWindowSeconds, { requests: batch.requests, retries, retriesSucceeded });
  }
  const entered = machine.transitions.length > 0 ? machine.record.state : undefined;
  if (entered === 'closed' || entered === 'open') {
    // A breaker that just closed or reopened starts from a fresh window.
    clearBreakerWindow(state);
  } else {
    state.outcomes.add(second, windowSeconds, batch);
    forgetReportersBefore(state.reporters, now - windowSeconds * 1000);
    for (const { reporter, failing } of reportersOf(batch)) if (failing) noteReporter(state.reporters, reporter, now);
    const totals = state.outcomes.sum(second, windowSeconds);
    if (machine.evaluate(policy.breaker, { ...totals, failingReporters: state.reporters.size }, now)) {
      clearBreakerWindow(state);
    }
  }
  forgetReportersBefore(state.activeReporters, now - policy.budgetWindowSeconds * 1000);
  for (const { reporter } of reportersOf(batch)) noteReporter(state.activeReporters, reporter, now);
  const budget = budgetView(outcomeBudgetPolicy(policy), state.budget.sum(second, policy.budgetWindowSeconds));
  recordHistory(state.history, second, batch, budget, machine.record.state);
  return { breaker: commitBreaker(state, machine), reporters: state.activeReporters.size };
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

/** Releases a concurrency lease (twin of release_lease-1.lua); false for an unknown or expired lease. */
export function releaseLease(
  state: DependencyState,
  leaseId: string,
  now: number,
): { released: boolean; leasesInUse: number } {
  pruneExpired(state.leases, now);
  const released = state.leases.delete(leaseId);
  return { released, leasesInUse: state.leases.size };
}

/** Extends a live concurrency lease by `leaseMs` from now (twin of renew_lease-1.lua); null for an unknown one. */
export function renewLease(
  state: DependencyState,
  leaseId: string,
  leaseMs: number,
  now: number,
): { expiresAt: number | null; leasesInUse: number } {
  pruneExpired(state.leases, now);
  if (!state.leases.has(leaseId)) return { expiresAt: null, leasesInUse: state.leases.size };
  state.leases.set(leaseId, now + leaseMs);
  return { expiresAt: now + leaseMs, leasesInUse: state.leases.size };
}
