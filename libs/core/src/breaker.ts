import type { BreakerPolicy, BreakerState } from '@sluice/protocol';

/**
 * A circuit breaker's stored state. The machine is lazy: time-based transitions (open → half_open,
 * a forced state lapsing) happen when the breaker is next looked at, so no timers exist.
 * The Lua twin is libs/store/src/redis/lua/includes/breaker.lua.
 */
export interface BreakerRecord {
  state: BreakerState;
  /** When the state began (epoch ms); null for a breaker that never left closed. */
  since: number | null;
  /** open: when it half-opens; forced_*: when it lapses (null: until reset). */
  openUntil: number | null;
  /** Opens since the breaker last closed: each reopen doubles the open duration, up to maxOpenMs. */
  opens: number;
  /** Consecutive probe successes while half_open. */
  probeSuccesses: number;
  /** Why an operator forced the state. */
  reason: string | null;
}

export interface BreakerTransition {
  from: BreakerState;
  to: BreakerState;
}

/** Outcome totals over the breaker window, and how many reporters reported failed or slow calls in it. */
export interface BreakerWindow {
  successes: number;
  failures: number;
  slow: number;
  failingReporters: number;
}

/** Guards rate comparisons against binary fractions, as the budget math does. */
const EPSILON = 1e-9;

export const CLOSED_BREAKER: Readonly<BreakerRecord> = Object.freeze({
  state: 'closed',
  since: null,
  openUntil: null,
  opens: 0,
  probeSuccesses: 0,
  reason: null,
});

/** The open duration for the n-th consecutive open: openMs doubled per reopen, capped at maxOpenMs. */
export function openDurationMs(policy: BreakerPolicy, opens: number): number {
  return Math.min(policy.maxOpenMs, policy.openMs * 2 ** Math.min(Math.max(opens - 1, 0), 30));
}

/**
 * True when the window says the breaker must open: enough calls, a failure or slow-call rate at its
 * threshold, and enough distinct reporters seeing failed or slow calls (one sick pod cannot open
 * it for all).
 */
export function windowTrips(policy: BreakerPolicy, window: BreakerWindow): boolean {
  const calls = window.successes + window.failures;
  if (calls === 0 || calls < policy.minimumCalls) return false;
  if (window.failingReporters < policy.minReporters) return false;
  const failing = window.failures + EPSILON >= policy.failureRateThreshold * calls;
  const slow = window.slow + EPSILON >= policy.slowCallRateThreshold * calls;
  return failing || slow;
}

/** An operator's forced state that has not lapsed at `now`. */
export function isForcedAt(record: BreakerRecord, now: number): boolean {
  const forced = record.state === 'forced_open' || record.state === 'forced_closed';
  return forced && (record.openUntil === null || now < record.openUntil);
}

/** Calls other than probes may not go out: the breaker is open, forced open, or half-open. */
export function blocksCalls(state: BreakerState): boolean {
  return state === 'open' || state === 'forced_open' || state === 'half_open';
}

/** The breaker state machine over one record; every change is appended to `transitions`. */
export class BreakerMachine {
  readonly transitions: BreakerTransition[] = [];

  constructor(private current: BreakerRecord) {}

  get record(): BreakerRecord {
    return this.current;
  }

  /**
   * Applies the transitions that time alone causes. A state that began after `now` (a clock step
   * back) begins now, its `openUntil` as far from now as it was from its start: nothing lasts
   * longer than the duration it was given.
   */
  settle(now: number): this {
    const { since } = this.current;
    if (since !== null && since > now) {
      const openUntil = this.current.openUntil === null ? null : this.current.openUntil - (since - now);
      this.current = { ...this.current, since: now, openUntil };
    }
    const { state, openUntil } = this.current;
    if (state === 'open' && openUntil !== null && now >= openUntil) {
      this.move('half_open', openUntil, {
        openUntil: null,
        opens: this.current.opens,
        probeSuccesses: 0,
        reason: null,
      });
    } else if ((state === 'forced_open' || state === 'forced_closed') && openUntil !== null && now >= openUntil) {
      this.move('closed', openUntil, { openUntil: null, opens: 0, probeSuccesses: 0, reason: null });
    }
    return this;
  }

  /** Opens a closed breaker whose window trips. Returns true when it opened. */
  evaluate(policy: BreakerPolicy, window: BreakerWindow, now: number): boolean {
    if (this.current.state !== 'closed' || !windowTrips(policy, window)) return false;
    this.open(policy, now, 1);
    return true;
  }

  /** A half-open probe's outcome: successes close it after closeAfterSuccesses, a failure reopens it. */
  probeOutcome(policy: BreakerPolicy, success: boolean, now: number): void {
    if (this.current.state !== 'half_open') return;
    if (!success) {
      this.open(policy, now, this.current.opens + 1);
      return;
    }
    const probeSuccesses = this.current.probeSuccesses + 1;
    if (probeSuccesses >= policy.closeAfterSuccesses) {
      this.move('closed', now, { openUntil: null, opens: 0, probeSuccesses: 0, reason: null });
    } else {
      this.current = { ...this.current, probeSuccesses };
    }
  }

  /** An operator's trip: forced_open fleet-wide, until reset or for `durationMs`. */
  trip(now: number, reason: string, durationMs?: number): void {
    this.force('forced_open', now, reason, durationMs);
  }

  /** An operator's force-close: forced_closed, the window ignored, until reset or for `durationMs`. */
  forceClose(now: number, reason: string, durationMs?: number): void {
    this.force('forced_closed', now, reason, durationMs);
  }

  /** Back to automatic closed with a fresh window. */
  reset(now: number): void {
    this.move('closed', now, { openUntil: null, opens: 0, probeSuccesses: 0, reason: null });
  }

  private open(policy: BreakerPolicy, now: number, opens: number): void {
    this.move('open', now, {
      openUntil: now + openDurationMs(policy, opens),
      opens,
      probeSuccesses: 0,
      reason: null,
    });
  }

  private force(state: 'forced_open' | 'forced_closed', now: number, reason: string, durationMs?: number): void {
    const openUntil = durationMs === undefined ? null : now + durationMs;
    this.move(state, now, { openUntil, opens: 0, probeSuccesses: 0, reason });
  }

  /** Enters `to`; a change of state (not a re-entry, e.g. a second trip) is a transition. */
  private move(to: BreakerState, since: number, fields: Omit<BreakerRecord, 'state' | 'since'>): void {
    const from = this.current.state;
    this.current = { state: to, since, ...fields };
    if (from === to) return;
    const transition = { from, to };
    ENTERED.set(transition, { ...this.current });
    this.transitions.push(transition);
  }
}

/** The record each transition entered (its own since, openUntil and reason), kept off the transition's shape. */
const ENTERED = new WeakMap<BreakerTransition, BreakerRecord>();

/**
 * The record a transition of a BreakerMachine entered: a lapse followed by a trip in one operation
 * is two transitions, the first entered at the lapse (what the Lua twin publishes for each).
 * Undefined for a transition made elsewhere.
 */
export function recordEntered(transition: BreakerTransition): BreakerRecord | undefined {
  return ENTERED.get(transition);
}
