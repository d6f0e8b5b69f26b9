import type { Clock } from '@sluice/core';
import type { AdmitDecision, BreakerState, ProbeGrant, RetryDecision, RetryRequest } from '@sluice/protocol';
import { isConfigError, type BreakerFacts } from '../errors';
import type { CoordinatorLink } from '../fleet/coordinator-link';
import type { BreakerWord, FleetDependency } from '../fleet/fleet-dependency';
import type { FleetProbe } from '../fleet/kept-probes';
import type { LeaseHold, LeaseKeeper } from '../fleet/leases';
import type { AskTimeouts, CoordinatorTransport } from '../transport/coordinator-transport';

/** The coordinator calls decisions need. */
export type DecisionTransport = Pick<CoordinatorTransport, 'retry' | 'retries' | 'admit'>;
import type { HeldRefusal } from '../fleet/held-denial';
import { within } from '../within';
import type { AdmitAnswer, Decider, RetryVerdict } from './decider';
import { AskNotSentError, RetryCoalescer, withDeadlineLeft } from './retry-coalescer';

const NOT_YET = { allow: false, reason: 'coordinator_unavailable', delayMs: 0 } as const;
const REFUSED_TOKEN = { allow: false, reason: 'config_error', delayMs: 0 } as const;
/** The call's deadline passed before its ask went out (nothing was asked) or was answered. */
const DEADLINE_PASSED = { allow: false, reason: 'deadline_exceeded', delayMs: 0 } as const;
/** The call's deadline passed while its admission was under way: the answer, when it comes, is a late one. */
const ADMISSION_PAST_DEADLINE = { allow: false, reason: 'deadline_exceeded' } as const;
const NOTHING = (): void => undefined;

/** How long a decision is waited for, and how long its request may take. */
export interface DecisionTimeouts {
  decisionTimeoutMs: number;
  requestTimeoutMs: number;
}

/** How retries are asked for. */
export interface AskingOptions {
  /**
   * True: the asks of one short window go out as one batch ({@link RetryCoalescer}), and a
   * denial that says when to ask again is repeated locally until then (`HeldDenial`). False:
   * one request per ask, every time.
   */
  coalesce: boolean;
}

/**
 * The fleet's decisions: the coordinator's retry and admit answers, waited for within the decision
 * timeout. It answers `undefined` when the coordinator did not answer and the fallback is to decide
 * (see {@link InsuredDecider}); a refused token is a `config_error` answer, never `undefined`.
 */
export class FleetDecider implements Decider {
  /** Who asks for retries: the coalescer, or the transport itself. */
  private readonly asker: Pick<CoordinatorTransport, 'retry'>;
  /** With coalescing: the ask of each dependency under way, which the asks after it wait for (its denial may hold). */
  private readonly underWay = new WeakMap<FleetDependency, Promise<unknown>>();

  constructor(
    private readonly transport: DecisionTransport,
    private readonly link: CoordinatorLink,
    private readonly leases: LeaseKeeper,
    private readonly clock: Clock,
    private readonly timeouts: DecisionTimeouts,
    private readonly asking: AskingOptions = { coalesce: true },
  ) {
    this.asker = asking.coalesce ? new RetryCoalescer(transport) : transport;
  }

  breakerState(dependency: FleetDependency, now: number): BreakerState {
    return dependency.fleetState(now);
  }

  breakerFacts(dependency: FleetDependency, now: number): BreakerFacts {
    return dependency.breakerFacts(now);
  }

  /**
   * POST /retry, or a held denial without asking; with coalescing, the ask goes out in one
   * `POST /retries` with the asks made alongside it. The answer is waited for within the decision
   * timeout from when the ask goes out: the time it waits in this process first (for the ask under
   * way, the coalescing window, a busy event loop) is the call's, within its deadline, not the
   * coordinator's. Before the fallback takes over, a decision that failed or came late allows no
   * retry (a slow coordinator never lets the fleet's budget leak through every client's own);
   * undefined once it has taken over.
   */
  async retry(dependency: FleetDependency, request: RetryRequest): Promise<RetryVerdict | undefined> {
    if (this.link.configError) return REFUSED_TOKEN;
    const askedAt = this.clock.now();
    const held = this.asking.coalesce ? await this.heldAfterUnderWay(dependency, askedAt) : undefined;
    if (held) return held;
    const ask = withDeadlineLeft(request, this.clock.now() - askedAt);
    if (ask === undefined) return DEADLINE_PASSED;
    const deadlineAt = ask.deadlineMs === undefined ? Number.POSITIVE_INFINITY : this.clock.now() + ask.deadlineMs;
    let startWait: (() => void) | undefined;
    const sent = this.asking.coalesce ? new Promise<void>((resolve) => (startWait = resolve)) : undefined;
    const answer = this.asker.retry(dependency.name, ask, { ...this.decisionTimeouts(), onSent: startWait });
    if (this.asking.coalesce) this.markUnderWay(dependency, answer);
    const answered = (decision: RetryDecision) => {
      this.link.succeeded('retry');
      dependency.applyBreaker(decision.breaker);
      // A late denial holds too: the calls after it need not ask.
      if (!decision.allow && this.asking.coalesce) holdDenial(dependency, decision, this.clock.now());
    };
    try {
      if (sent) await Promise.race([sent, answer.then(NOTHING, NOTHING)]);
      const decision = await within(answer, this.waitMs(deadlineAt));
      if (decision === undefined) {
        // Slow is not down: the late answer, or its failure, tells the link. No retry without a grant.
        void answer.then(answered, (error: unknown) => this.link.failed('retry', error, askedAt));
        return this.clock.now() >= deadlineAt ? DEADLINE_PASSED : NOT_YET;
      }
      answered(decision);
      const now = this.clock.now();
      if (decision.allow) dependency.local.countFleetRetry(now);
      const verdict: RetryVerdict = { allow: decision.allow, reason: decision.reason, delayMs: decision.delayMs };
      if (decision.reason === 'breaker_open') verdict.breaker = factsOf(decision.breaker, decision.retryAfterMs, now);
      else if (decision.reason === 'budget_exhausted' && decision.retryAfterMs) {
        verdict.budgetRetryAfterMs = decision.retryAfterMs;
      }
      return verdict;
    } catch (error) {
      if (error instanceof AskNotSentError) return DEADLINE_PASSED;
      if (isConfigError(error)) {
        this.link.failed('retry', error);
        return REFUSED_TOKEN;
      }
      // A hiccup, not yet an outage: no retry without the fleet's grant.
      return this.link.failed('retry', error, askedAt) ? undefined : NOT_YET;
    }
  }

  /**
   * The held denial of the dependency, once the ask under way for it (if any) has been answered or
   * half the decision time has passed: the asks that fail meanwhile go out together after it, or
   * not at all when its answer is a denial that holds.
   */
  private async heldAfterUnderWay(dependency: FleetDependency, askedAt: number): Promise<RetryVerdict | undefined> {
    const underWay = this.underWay.get(dependency);
    if (underWay) await within(underWay, Math.max(1, Math.floor(this.timeouts.decisionTimeoutMs / 2)));
    const now = this.clock.now();
    const held = dependency.heldDenial.current(underWay ? now : askedAt);
    return held && heldVerdict(held, now);
  }

  private markUnderWay(dependency: FleetDependency, answer: Promise<unknown>): void {
    const settled = answer.then(
      () => undefined,
      () => undefined,
    );
    this.underWay.set(dependency, settled);
    void settled.then(() => {
      if (this.underWay.get(dependency) === settled) this.underWay.delete(dependency);
    });
  }

  /**
   * POST /admit, with the attempt's cost: the probe and lease it grants, or its refusal; undefined
   * when it does not answer in time (the fallback decides this attempt). The request itself may
   * take the longer request timeout: a lease granted in an answer that comes after the caller
   * stopped waiting is released rather than left to expire, and a probe granted in it is kept for
   * the next attempt on the half-open breaker, which takes it without asking. The wait ends at the
   * call's deadline (`deadlineAt`, on the clock) if that comes first: the call gives up
   * `deadline_exceeded`, and the answer is a late one.
   */
  async admit(
    dependency: FleetDependency,
    cost: number,
    state: BreakerState,
    deadlineAt = Number.POSITIVE_INFINITY,
  ): Promise<AdmitAnswer | undefined> {
    if (this.link.configError) return { allow: false, reason: 'config_error' };
    const kept = state === 'half_open' ? dependency.keptProbes.take(this.clock.now()) : undefined;
    if (kept !== undefined) return { allow: true, probe: kept, permit: undefined };
    // Attempts the fallback let out hold no lease: while they run, the fleet undercounts this process.
    const held = dependency.limited ? dependency.localLimits.whileUnleased() : undefined;
    if (held) return held;
    // Nothing to ask for: no attempt may go out.
    if (this.clock.now() >= deadlineAt) return ADMISSION_PAST_DEADLINE;
    const askedAt = Date.now();
    const startedAt = this.clock.now();
    const period = dependency.keptProbes.period;
    const answer = this.transport.admit(dependency.name, this.decisionTimeouts(), cost);
    let decision: AdmitDecision | undefined;
    try {
      decision = await within(answer, this.waitMs(deadlineAt));
    } catch (error) {
      this.link.failed('admit', error, startedAt);
      return isConfigError(error) ? { allow: false, reason: 'config_error' } : undefined;
    }
    if (decision === undefined) {
      // Slow is not down: the late answer, or its failure, tells the link; the local limits decide this call.
      void answer.then(
        (late) => {
          this.link.succeeded('admit');
          if (late.lease) this.leases.releaseUnheld(dependency.name, late.lease.id);
          if (late.allow && late.probe) dependency.keptProbes.keep(probeOf(late.probe, startedAt, askedAt, period));
        },
        (error: unknown) => this.link.failed('admit', error, startedAt),
      );
      return this.clock.now() >= deadlineAt ? ADMISSION_PAST_DEADLINE : undefined;
    }
    this.link.succeeded('admit');
    dependency.applyBreaker(decision.breaker);
    if (!decision.allow) return this.refusalOf(decision);
    const probe = decision.probe && probeOf(decision.probe, startedAt, askedAt, period);
    return this.admitted(dependency, decision, cost, askedAt, probe);
  }

  private refusalOf(decision: AdmitDecision): AdmitAnswer {
    if (decision.reason === 'rate_limited' || decision.reason === 'concurrency_limited') {
      return { allow: false, reason: decision.reason, retryAfterMs: decision.retryAfterMs };
    }
    return {
      allow: false,
      reason: 'breaker_open',
      breaker: factsOf(decision.breaker, decision.retryAfterMs, this.clock.now()),
    };
  }

  /**
   * The fleet admitted an attempt: its probe token and lease, and the local limits kept warm. A
   * grant this process cannot take up (the fallback let attempts out meanwhile: they hold no lease,
   * so the fleet did not count them, and the local count is full) gives the lease back, and the
   * local refusal stands.
   */
  private admitted(
    dependency: FleetDependency,
    decision: AdmitDecision,
    cost: number,
    askedAt: number,
    probe: FleetProbe | undefined,
  ): AdmitAnswer {
    if (decision.lease && dependency.limited) {
      const refusal = dependency.localLimits.whileUnleased();
      if (refusal) {
        this.leases.releaseUnheld(dependency.name, decision.lease.id);
        return refusal;
      }
    }
    const slot = dependency.limited && dependency.localLimits.granted(this.clock.now(), cost) ? 'leased' : undefined;
    let lease: LeaseHold | undefined;
    if (decision.lease) {
      const leaseMs = dependency.policy?.concurrency?.leaseMs ?? Math.max(100, decision.lease.expiresAt - askedAt);
      lease = this.leases.hold(dependency.name, decision.lease.id, leaseMs, askedAt);
    }
    return { allow: true, probe, permit: lease || slot ? { lease, slot } : undefined };
  }

  /** How long an answer is waited for: the decision timeout, or until the call's deadline if that is sooner. */
  private waitMs(deadlineAt: number): number {
    return Math.max(0, Math.min(this.timeouts.decisionTimeoutMs, deadlineAt - this.clock.now()));
  }

  /**
   * A decision's request may take the longer of the two timeouts (a late answer still tells the
   * link, and an admit's late lease is released); it is asked again, with the same `requestId`,
   * only within the decision timeout (a caller whose deadline came first no longer waits, and a
   * re-ask with the same id changes nothing).
   */
  private decisionTimeouts(): AskTimeouts {
    const { decisionTimeoutMs, requestTimeoutMs } = this.timeouts;
    return { timeoutMs: Math.max(decisionTimeoutMs, requestTimeoutMs), reAskWithinMs: decisionTimeoutMs };
  }
}

/** What a decision's `breaker` and `retryAfterMs` say of the breaker that refused. */
function factsOf(breaker: BreakerWord, retryAfterMs: number | undefined, now: number): BreakerFacts {
  const forced = breaker.state === 'forced_open' || breaker.state === 'forced_closed';
  const openUntil = breaker.openUntil ?? null;
  const fromOpenUntil = openUntil === null ? null : Math.max(0, openUntil - now);
  return {
    state: breaker.state,
    operatorReason: forced ? (breaker.reason ?? null) : null,
    openUntil,
    retryAfterMs: retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : fromOpenUntil,
  };
}

/** A denial that says when to ask again is held until then (see `HeldDenial`). */
function holdDenial(dependency: FleetDependency, decision: RetryDecision, now: number): void {
  const { reason, retryAfterMs, breaker } = decision;
  if (
    (reason !== 'budget_exhausted' && reason !== 'breaker_open') ||
    !(retryAfterMs !== undefined && retryAfterMs > 0)
  ) {
    return;
  }
  dependency.heldDenial.hold({ reason, breaker, until: now + retryAfterMs }, now);
}

/** The held denial, as the coordinator's would read now: the same reason, the breaker's facts with the time left. */
function heldVerdict(held: HeldRefusal, now: number): RetryVerdict {
  const verdict: RetryVerdict = { allow: false, reason: held.reason, delayMs: 0 };
  if (held.reason === 'breaker_open') verdict.breaker = factsOf(held.breaker, held.until - now, now);
  else verdict.budgetRetryAfterMs = held.until - now;
  return verdict;
}

/**
 * A granted probe as this client holds it: until its `expiresAt`, counted on the client's clock from
 * when the ask went out (`startedAt` on the clock, `askedAt` on the wall clock), in `period`.
 */
function probeOf(grant: ProbeGrant, startedAt: number, askedAt: number, period: number): FleetProbe {
  return { token: grant.token, until: startedAt + (grant.expiresAt - askedAt), period };
}
