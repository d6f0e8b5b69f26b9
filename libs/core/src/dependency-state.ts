import type { BudgetView, DependencyUsage, RateLimitPolicy, RetryBudgetPolicy } from '@sluice/protocol';
import { BreakerMachine, CLOSED_BREAKER, type BreakerRecord, type BreakerTransition } from './breaker';
import type { HistoryRing } from './dependency-history';
import { gcraBacklog, type GcraCell } from './gcra';
import { LATENCY_FIELDS } from './latency-histogram';
import { budgetView } from './retry-budget';
import { SlidingWindowCounter, epochSecond } from './sliding-window';

/**
 * Everything kept for one dependency, as plain state the pure decisions (dependency-decisions.ts)
 * change in place; in Redis, the keys of one hash tag (libs/store keys.ts), changed by the Lua twins.
 */
export interface DependencyState {
  /** First attempts (`requests`), retries and the retries that succeeded over the budget window. */
  budget: SlidingWindowCounter<BudgetField>;
  outcomes: SlidingWindowCounter<'successes' | 'failures' | 'slow'>;
  /** Reporter → last report of a failed or slow call (epoch ms). */
  reporters: Map<string, number>;
  /** Reporter → last report of any kind (epoch ms). */
  activeReporters: Map<string, number>;
  breaker: BreakerRecord;
  /** Probe token → lease expiry (epoch ms). */
  probes: Map<string, number>;
  /** The rate limit's theoretical arrival time. */
  rateTat: GcraCell | null;
  /** Concurrency lease id → expiry (epoch ms). */
  leases: Map<string, number>;
  /** Latency counts on the fixed bounds (LATENCY_FIELDS). */
  latency: SlidingWindowCounter<string>;
  /** The last 15 minutes, a step per 10 s (dependency-history.ts). */
  history: HistoryRing;
}

/** The counters of the budget window. */
export const BUDGET_FIELDS = ['requests', 'retries', 'retriesSucceeded'] as const;
export type BudgetField = (typeof BUDGET_FIELDS)[number];

/** A breaker after an operation, with the transitions that operation made (at most one call makes each). */
export interface BreakerSnapshot {
  record: BreakerRecord;
  transitions: BreakerTransition[];
}

export interface OutcomeTotals {
  successes: number;
  failures: number;
  slow: number;
}

/** What reading a dependency asks for: its budget, and the window of its outcome totals and latency. */
export interface DependencyReadPolicy {
  budget: RetryBudgetPolicy;
  outcomeWindowSeconds: number;
  /** The rate limit whose burst left is read; none: not read. */
  rateLimit?: RateLimitPolicy;
}

export interface DependencySnapshot {
  budget: BudgetView;
  outcomes: OutcomeTotals;
  /** Distinct reporters of the dependency in its budget window. */
  reporters: number;
  /** What its limits hold now. */
  usage: DependencyUsage;
  /** Latency counts on the fixed bounds over the outcome window. */
  latency: number[];
  breaker: BreakerSnapshot;
}

/** An operator's trip, force-close or reset. */
export type BreakerAction =
  | { action: 'trip'; reason: string; durationMs?: number }
  | { action: 'force_close'; reason: string; durationMs?: number }
  | { action: 'reset'; reason?: string };

export function createDependencyState(): DependencyState {
  return {
    budget: new SlidingWindowCounter(BUDGET_FIELDS),
    outcomes: new SlidingWindowCounter(['successes', 'failures', 'slow']),
    reporters: new Map(),
    activeReporters: new Map(),
    breaker: { ...CLOSED_BREAKER },
    probes: new Map(),
    rateTat: null,
    leases: new Map(),
    latency: new SlidingWindowCounter(LATENCY_FIELDS),
    history: new Map(),
  };
}

/**
 * The breaker with its time-based transitions made and kept (breakerNow() in the Lua include); a
 * forced state that lapsed into closed starts from a fresh window, as every entry into closed does.
 */
export function settleBreaker(state: DependencyState, now: number): BreakerMachine {
  const machine = new BreakerMachine(state.breaker).settle(now);
  if (machine.transitions.some(({ to }) => to === 'closed' || to === 'open')) clearBreakerWindow(state);
  commitBreaker(state, machine);
  return machine;
}

/** Keeps the machine's record; probe leases go once the breaker is no longer half-open. */
export function commitBreaker(state: DependencyState, machine: BreakerMachine): BreakerSnapshot {
  state.breaker = machine.record;
  if (state.breaker.state !== 'half_open') state.probes.clear();
  return breakerSnapshot(machine);
}

export function breakerSnapshot(machine: BreakerMachine): BreakerSnapshot {
  return { record: { ...machine.record }, transitions: [...machine.transitions] };
}

/** A fresh breaker window: outcomes, failing reporters and probe leases go (latency stays). */
export function clearBreakerWindow(state: DependencyState): void {
  state.outcomes.clear();
  state.reporters.clear();
  state.probes.clear();
}

/**
 * An operator's action (twin of set_breaker-4.lua): each clears the window and the probe leases.
 * A re-entry (a second trip) makes no transition; the store announces the state all the same.
 */
export function applyBreakerAction(state: DependencyState, action: BreakerAction, now: number): BreakerSnapshot {
  const machine = new BreakerMachine(state.breaker).settle(now);
  if (action.action === 'trip') machine.trip(now, action.reason, action.durationMs);
  else if (action.action === 'force_close') machine.forceClose(now, action.reason, action.durationMs);
  else machine.reset(now);
  clearBreakerWindow(state);
  return commitBreaker(state, machine);
}

/** A dependency's budget, outcome totals, latency and breaker (twin of read_dependency-4.lua); unknown: empty. */
export function readDependencyState(
  state: DependencyState | undefined,
  policy: DependencyReadPolicy,
  now: number,
): DependencySnapshot {
  const second = epochSecond(now);
  const { windowSeconds } = policy.budget;
  const machine = state ? settleBreaker(state, now) : new BreakerMachine({ ...CLOSED_BREAKER });
  const counts = state?.budget.sum(second, windowSeconds) ?? { requests: 0, retries: 0, retriesSucceeded: 0 };
  const outcomes = state?.outcomes.sum(second, policy.outcomeWindowSeconds) ?? { successes: 0, failures: 0, slow: 0 };
  const latency = state?.latency.sum(second, policy.outcomeWindowSeconds);
  return {
    budget: budgetView(policy.budget, counts),
    outcomes,
    reporters: countReportersAfter(state?.activeReporters, now - windowSeconds * 1000),
    usage: {
      leases: countAfter(state?.leases, now),
      rateRemaining: policy.rateLimit ? rateRemaining(policy.rateLimit, state?.rateTat ?? null, now) : null,
    },
    latency: LATENCY_FIELDS.map((field) => latency?.[field] ?? 0),
    breaker: breakerSnapshot(machine),
  };
}

/**
 * Most reporters one dependency's reporter sets hold (the failing ones, and every one of the
 * budget window); past it the one that reported least recently goes. Far above any quorum
 * (minReporters is at most 1,000), so it only bounds a fleet that invents reporter ids.
 */
export const MAX_REPORTERS = 10_000;

/** Notes a reporter's latest report, the least recent going past MAX_REPORTERS (twin: ZADD, then ZREMRANGEBYRANK). */
export function noteReporter(reporters: Map<string, number>, reporter: string, now: number): void {
  reporters.delete(reporter); // re-inserted last: the least recent come first
  reporters.set(reporter, now);
  for (const oldest of reporters.keys()) {
    if (reporters.size <= MAX_REPORTERS) break;
    reporters.delete(oldest);
  }
}

/** How many entries' times are after `cutoff` (twin: ZCOUNT of (cutoff, +inf)). */
function countAfter(entries: Map<string, number> | undefined, cutoff: number): number {
  let count = 0;
  for (const at of entries?.values() ?? []) if (at > cutoff) count++;
  return count;
}

/** What is left of a rate limit's burst (twin of read_dependency-7.lua). */
function rateRemaining(policy: RateLimitPolicy, tat: GcraCell | null, now: number): number {
  return Math.floor((policy.periodMs * policy.burst - gcraBacklog(policy, tat, now)) / policy.periodMs);
}

/**
 * How many reporters reported after `cutoff` (twin: ZCOUNT of (cutoff, +inf)); noteReporter keeps
 * them least recent first, so only the stale ones are walked.
 */
function countReportersAfter(reporters: Map<string, number> | undefined, cutoff: number): number {
  if (reporters === undefined) return 0;
  let stale = 0;
  for (const at of reporters.values()) {
    if (at > cutoff) break;
    stale++;
  }
  return reporters.size - stale;
}

/** Forgets the reporters whose latest report is at or before `cutoff` (noteReporter keeps them in that order). */
export function forgetReportersBefore(reporters: Map<string, number>, cutoff: number): void {
  for (const [reporter, at] of reporters) {
    if (at > cutoff) break;
    reporters.delete(reporter);
  }
}

/** Drops the entries whose time (an expiry, or a last sighting moved by the window) is at or before `cutoff`. */
export function pruneExpired(entries: Map<string, number>, cutoff: number): void {
  for (const [key, at] of entries) if (at <= cutoff) entries.delete(key);
}

/**
 * The longest a concurrency lease or a probe lease can be (the policy bounds of docs/api.md): a
 * lease set does not keep each lease's length, and a policy change may leave longer leases than
 * the current leaseMs, so a lease is cut only past the longer of leaseMs and this bound.
 */
export const LONGEST_LEASE_MS = { concurrency: 3_600_000, probe: 600_000 } as const;

/**
 * Cuts the expiries past `now + max(leaseMs, longestMs)` (a clock step back left them) to end
 * then: a step back of any size holds a lease at most that long. Twin of leaseSetClamp (lease_set.lua).
 */
export function clampLeases(entries: Map<string, number>, now: number, leaseMs: number, longestMs: number): void {
  const latest = now + Math.max(leaseMs, longestMs);
  for (const [key, at] of entries) if (at > latest) entries.set(key, latest);
}
