import {
  BreakerMachine,
  CLOSED_BREAKER,
  SlidingWindowCounter,
  backoffDelay,
  blocksCalls,
  epochSecond,
  retryFits,
  type BreakerRecord,
  type BreakerTransition,
  type RandomSource,
} from '@sluice/core';
import type { BreakerState, DependencyPolicy, RetryRequest } from '@sluice/protocol';
import type { BreakerFacts } from '../errors';

/** Bound once: a call through the package's re-exports looks the name up on every call (the hot path counts per second). */
const secondOf = epochSecond;

/** The local fallback's retry decision. */
export interface LocalRetryVerdict {
  allow: boolean;
  reason: string;
  delayMs: number;
  breakerState?: BreakerState;
}

/**
 * The local fallback for one dependency: a retry budget and a circuit breaker of this process alone,
 * built on the same libs/core algorithms as the coordinator. It is fed every call, connected or not,
 * so it is warm when the coordinator goes away: failed and slow outcomes one by one, first attempts
 * and plain successes in batches ({@link count}), which it takes through `catchUp` before it
 * weighs a failure or decides a retry. Its budget floor is scaled by `share` (this
 * process's part of the fleet). When it takes over, its breaker starts from the fleet's last state
 * ({@link adopt}).
 */
export class LocalGuard {
  private readonly budget = new SlidingWindowCounter(['requests', 'retries', 'retriesSucceeded'] as const);
  private readonly outcomes = new SlidingWindowCounter(['successes', 'failures', 'slow'] as const);
  private machine = new BreakerMachine({ ...CLOSED_BREAKER });
  private probesInFlight = 0;
  /** Counts of the current second not yet added to the windows (adding per call is the costly part). */
  private pendingSecond = Number.NaN;
  private pendingRequests = 0;
  private pendingSuccesses = 0;

  constructor(
    private readonly policy: () => DependencyPolicy,
    private readonly share: () => number,
    private readonly onTransition: (transition: BreakerTransition) => void,
    /** Hands over the counts batched elsewhere (through {@link count}); called before they are needed. */
    private readonly catchUp: (now: number) => void = () => undefined,
  ) {}

  /** A first attempt went out: the budget's deposit. */
  recordRequest(now: number): void {
    this.count(now, 1, 0);
  }

  /** First attempts and plain (neither failed nor slow) successes, counted elsewhere and handed over in a batch at `now`. */
  count(now: number, requests: number, successes: number): void {
    if (secondOf(now) !== this.pendingSecond) this.settlePending(now);
    this.pendingRequests += requests;
    this.pendingSuccesses += successes;
  }

  /** An attempt's outcome; a failed or slow one may open the breaker. */
  recordOutcome(now: number, failed: boolean, slow: boolean): void {
    if (!failed && !slow) {
      this.count(now, 0, 1);
      return;
    }
    this.catchUp(now);
    const second = secondOf(now);
    this.settlePending(now);
    const policy = this.policy().breaker;
    this.outcomes.add(second, policy.windowSeconds, {
      successes: failed ? 0 : 1,
      failures: failed ? 1 : 0,
      slow: slow ? 1 : 0,
    });
    const window = this.outcomes.sum(second, policy.windowSeconds);
    // One process is one reporter: the fleet's minReporters cannot apply here.
    const local = { ...policy, minReporters: 1 };
    if (this.machine.settle(now).evaluate(local, { ...window, failingReporters: 1 }, now)) this.outcomes.clear();
    this.publish();
  }

  /** Adds the counts kept for the current second to the windows, and starts a new second at `now`. */
  private settlePending(now: number): void {
    const policy = this.policy();
    if (this.pendingRequests > 0) {
      this.budget.add(this.pendingSecond, policy.retryBudget.windowSeconds, { requests: this.pendingRequests });
    }
    if (this.pendingSuccesses > 0) {
      this.outcomes.add(this.pendingSecond, policy.breaker.windowSeconds, { successes: this.pendingSuccesses });
    }
    this.pendingRequests = this.pendingSuccesses = 0;
    this.pendingSecond = secondOf(now);
  }

  /** The local breaker's state now. */
  state(now: number): BreakerState {
    const state = this.machine.settle(now).record.state;
    this.publish();
    return state;
  }

  /** The local breaker now, for a {@link BreakerOpenError} (an operator's reason, when it adopted a forced state). */
  facts(now: number): BreakerFacts {
    const { state, openUntil, reason } = this.machine.settle(now).record;
    this.publish();
    const forced = state === 'forced_open' || state === 'forced_closed';
    return {
      state,
      operatorReason: forced ? reason : null,
      openUntil,
      retryAfterMs: openUntil === null ? null : Math.max(0, openUntil - now),
    };
  }

  /** While half-open, lets up to `halfOpenProbes` probes out at once. */
  tryProbe(now: number): boolean {
    if (this.state(now) !== 'half_open' || this.probesInFlight >= this.policy().breaker.halfOpenProbes) return false;
    this.probesInFlight++;
    return true;
  }

  /** A local probe ended with no outcome (the caller aborted it). */
  releaseProbe(): void {
    this.probesInFlight = Math.max(0, this.probesInFlight - 1);
  }

  /** A local probe's outcome: closes the breaker after enough successes, reopens it on a failure. */
  probeOutcome(success: boolean, now: number): void {
    this.probesInFlight = Math.max(0, this.probesInFlight - 1);
    this.machine.settle(now).probeOutcome(this.policy().breaker, success, now);
    if (this.machine.record.state === 'closed') this.outcomes.clear();
    this.publish();
  }

  /**
   * Counts a retry the coordinator granted this process, so that if the fallback takes over within
   * the window, the local budget starts from what the process already spent.
   */
  countFleetRetry(now: number): void {
    this.settlePending(now);
    this.budget.add(secondOf(now), this.policy().retryBudget.windowSeconds, { retries: 1 });
  }

  /**
   * A granted retry (the coordinator's or this fallback's, both counted above) answered: under an
   * adaptive budget it gives its grant back, as the coordinator's budget does.
   */
  countRetrySucceeded(now: number): void {
    this.settlePending(now);
    this.budget.add(secondOf(now), this.policy().retryBudget.windowSeconds, { retriesSucceeded: 1 });
  }

  /**
   * Takes the fleet breaker's last known state as this breaker's own, without announcing a change
   * (what callers saw was already that state). Fed every call, the local breaker would otherwise
   * take over with its own view: open or half-open on a dependency the fleet has seen recover, or
   * closed while an operator holds the dependency open. The window's counts are kept.
   */
  adopt(state: BreakerState, openUntil: number | null, now: number, reason: string | null = null): void {
    const { record } = this.machine.settle(now);
    this.machine.transitions.length = 0;
    if (state === record.state && openUntil === record.openUntil) return;
    const adopted: BreakerRecord = {
      state,
      since: now,
      openUntil: state === 'closed' || state === 'half_open' ? null : openUntil,
      opens: state === 'closed' ? 0 : Math.max(1, record.opens),
      probeSuccesses: 0,
      reason: state === 'forced_open' || state === 'forced_closed' ? reason : null,
    };
    this.machine = new BreakerMachine(adopted);
    this.probesInFlight = 0;
  }

  /** May this process retry, on its own? The coordinator's rules, on local counts. */
  decideRetry(request: RetryRequest, now: number, random: RandomSource): LocalRetryVerdict {
    this.catchUp(now);
    const policy = this.policy();
    const delayMs = backoffDelay(
      policy.backoff,
      { attempt: request.attempt, retryAfterMs: request.retryAfterMs },
      random,
    );
    const deny = (reason: string): LocalRetryVerdict => ({ allow: false, reason, delayMs, breakerState: state });
    const state = this.state(now);
    if (request.attempt + 1 > policy.retryBudget.maxAttempts) return deny('max_attempts');
    if (blocksCalls(state)) return deny('breaker_open');
    if (request.deadlineMs !== undefined && delayMs >= request.deadlineMs) return deny('deadline_exceeded');
    const budget = {
      ...policy.retryBudget,
      minRetriesPerSecond: policy.retryBudget.minRetriesPerSecond * this.share(),
    };
    this.settlePending(now);
    const second = secondOf(now);
    const { requests, retries, retriesSucceeded } = this.budget.sum(second, budget.windowSeconds);
    // The floor scaled to this process's share scales the cap's floor alike: its own cap share.
    if (!retryFits(budget, retries, requests, retriesSucceeded)) return deny('budget_exhausted');
    this.budget.add(second, budget.windowSeconds, { retries: 1 });
    return { allow: true, reason: 'granted', delayMs, breakerState: state };
  }

  private publish(): void {
    const { transitions } = this.machine;
    if (transitions.length === 0) return;
    for (const transition of transitions.splice(0)) this.onTransition(transition);
  }
}
