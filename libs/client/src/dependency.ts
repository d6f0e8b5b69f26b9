import { backoffDelay, systemClock } from '@sluice/core';
import {
  ATTEMPT_HEADER,
  DEADLINE_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  MAX_DURATION_MS,
  MAX_RETRY_ATTEMPT,
  type BreakerState,
  type RetryRequest,
} from '@sluice/protocol';
import { classify, isDependencyFailure, retryDenial, type Failure } from './classification';
import { currentContext, type SluiceRequestContext } from './context/request-context';
import {
  AttemptTimeoutError,
  BreakerOpenError,
  DeadlineExceededError,
  GiveUpError,
  LimitedError,
  type GiveUpReason,
  type LimitReason,
} from './errors';
import type { EventEmitter } from './events';
import type { FleetDependency } from './fleet/fleet-dependency';
import type { LeaseHold } from './fleet/leases';
import { positiveInteger, type AutoTimeoutBounds, type HedgeOptions, type ResolvedDependencyOptions } from './options';
import { sleep } from './abortable-sleep';
import type { AttemptContext, ExecuteOptions } from './execute-options';
import { fetchThrough, type SluiceFetchInit } from './fetch';
import { PolicyEvents, type GiveUpEvent, type RetryEvent } from './policy-events';
import type { AdmitVerdict, SluiceRuntime } from './runtime';
import type { Expiring } from './timeout-watch';

const NO_OPTIONS: ExecuteOptions = {};
const LOCAL_PROBE = Symbol('local probe');
type Probe = { token: string } | typeof LOCAL_PROBE;

/**
 * What an admitted attempt holds until it settles: the fleet's concurrency lease, and a slot of the
 * local count (`leased` alongside a lease, `local` when the fallback admitted it).
 */
interface Permit {
  lease: LeaseHold | undefined;
  slot: 'leased' | 'local' | undefined;
}

/** What let an attempt out: the half-open breaker's probe and the limits' permit, when either applies. */
interface Admission {
  probe: Probe | undefined;
  permit: Permit | undefined;
}

const NO_ADMISSION: Admission = { probe: undefined, permit: undefined };

/** A limit's refusal, the fleet's or the local fallback's. */
interface Refusal {
  reason: LimitReason;
  retryAfterMs: number;
}

/** The state of one execute() call. */
interface Call {
  deadlineAt: number;
  idempotent: boolean;
  key: string | undefined;
  signal: AbortSignal | undefined;
  request: SluiceRequestContext | undefined;
  /** Attempts sent so far, hedges included. */
  launched: number;
  /** What each attempt costs against a rate limit. */
  cost: number;
}

/** One attempt: its context for the caller's function, with a signal made only when asked for. */
class Attempt implements AttemptContext, Expiring {
  private controller: AbortController | undefined;
  private abortReason: unknown;
  /** Aborted by the SDK for a reason that is no outcome of the dependency (a lost hedge, the caller's abort). */
  abandoned = false;
  /** When the attempt times out (real time, epoch ms), and what happens then. */
  expiresAt = 0;
  expire: () => void = () => undefined;
  /** Ends the attempt as abandoned (a lost hedge, the caller's abort): aborted, and no outcome recorded. */
  cancel: (reason: unknown) => void = () => undefined;

  constructor(
    readonly attempt: number,
    readonly deadlineMs: number,
    private readonly key: string | undefined,
    readonly hedge: boolean,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get headers(): Record<string, string> {
    const headers: Record<string, string> = {
      [DEADLINE_HEADER]: String(Math.max(0, Math.floor(this.deadlineMs))),
      [ATTEMPT_HEADER]: String(this.attempt),
    };
    if (this.key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = this.key;
    return headers;
  }

  abort(reason: unknown): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}

/**
 * The automatic per-attempt timeout: 2 × the fleet's p99 latency, clamped to the bounds; the upper
 * bound while no p99 is served.
 * @example
 * autoTimeoutMs(120, { minMs: 100, maxMs: 3000 }); // 240
 */
export function autoTimeoutMs(p99: number | null | undefined, bounds: AutoTimeoutBounds): number {
  if (p99 === null || p99 === undefined || !Number.isFinite(p99)) return bounds.maxMs;
  return Math.min(bounds.maxMs, Math.max(bounds.minMs, Math.ceil(2 * p99)));
}

/**
 * The hedge delay: the fixed one, or the fleet's p95 latency (the fallback delay while none is served).
 * @example
 * hedgeDelayMs(40, { delayMs: 'p95' }); // 40
 */
export function hedgeDelayMs(p95: number | null | undefined, hedge: HedgeOptions): number {
  if (hedge.delayMs !== 'p95') return hedge.delayMs;
  if (p95 === null || p95 === undefined || !Number.isFinite(p95)) return hedge.fallbackDelayMs ?? 100;
  return Math.max(1, Math.ceil(p95));
}

/**
 * A dependency's policy, from {@link Sluice.dependency}: runs calls with fleet-approved retries,
 * the fleet's breaker, a deadline over the whole call, per-attempt timeouts and optional hedging.
 * @example
 * const payments = sluice.dependency('payments-api', { maxAttempts: 3 });
 * const receipt = await payments.execute(({ signal, headers }) => charge(order, { signal, headers }), {
 *   idempotencyKey: order.id,
 * });
 */
export class Dependency extends PolicyEvents {
  /** @internal Built by {@link Sluice.dependency}. */
  constructor(
    /** The dependency's name, as the coordinator knows it. */
    readonly name: string,
    /** The resolved options. */
    readonly options: ResolvedDependencyOptions,
    private readonly fleet: FleetDependency,
    private readonly runtime: SluiceRuntime,
    private readonly forward: { retry: EventEmitter<RetryEvent>; giveUp: EventEmitter<GiveUpEvent> },
  ) {
    super();
    fleet.changes.event((change) => {
      if ((change.source === 'local') === runtime.governedLocally()) this.breakerChanged(change);
    });
  }

  /**
   * The breaker state that governs calls now: the fleet's, or the local one while in fallback.
   * @example
   * if (payments.breakerState === 'forced_open') showMaintenanceBanner();
   */
  get breakerState(): BreakerState {
    return this.runtime.breakerState(this.fleet, this.runtime.clock.now());
  }

  /**
   * The per-attempt timeout now, in ms (the fixed one, or the automatic one from the fleet's p99).
   * @example
   * console.log(`attempts time out after ${payments.attemptTimeoutMs} ms`);
   */
  get attemptTimeoutMs(): number {
    const { timeoutMs } = this.options;
    return timeoutMs === 'auto' ? autoTimeoutMs(this.fleet.latency?.p99, this.options.autoTimeout) : timeoutMs;
  }

  /**
   * The hedge delay now, in ms; undefined when hedging is off.
   * @example
   * console.log(`hedging after ${search.hedgeDelayMs} ms`);
   */
  get hedgeDelayMs(): number | undefined {
    return this.options.hedge ? hedgeDelayMs(this.fleet.latency?.p95, this.options.hedge) : undefined;
  }

  /**
   * Runs `fn` under the policy. With a closed breaker the call goes straight out (no request to the
   * coordinator); a retriable failure asks the coordinator for one retry and waits its backoff
   * (never less than the dependency's Retry-After); everything happens within the deadline.
   * When the coordinator's policy gives the dependency a rate or concurrency limit, each attempt
   * first asks `POST /admit` (with `cost`), holds the concurrency lease it gets until it settles,
   * and waits out a refusal within the deadline (see `whenLimited`).
   * Rejects with `fn`'s own error when it is not retriable (e.g. a 404), with a {@link GiveUpError}
   * (reason and last error) when a retriable failure is not retried, with a {@link LimitedError}
   * when a limit refused it, or with the signal's reason.
   * @example
   * const user = await users.execute(({ signal }) => api.getUser(id, { signal }), { idempotent: true });
   * @example
   * await payments.execute(({ headers }) => api.charge(order, { headers }), { idempotencyKey: order.id, signal });
   * @example
   * await geocoder.execute(({ signal }) => geocodeBatch(addresses, { signal }), { cost: addresses.length });
   */
  async execute<T>(
    fn: (context: AttemptContext) => PromiseLike<T> | T,
    options?: ExecuteOptions | AbortSignal,
  ): Promise<T> {
    const opts = options === undefined ? NO_OPTIONS : options instanceof AbortSignal ? { signal: options } : options;
    const { clock } = this.runtime;
    const signal = opts.signal;
    if (signal?.aborted) throw signal.reason;
    const cost = opts.cost ?? 1;
    if (cost !== 1) positiveInteger('cost', cost, 1, 1_000_000);
    const request = currentContext();
    let deadlineAt = clock.now() + (opts.deadlineMs ?? this.options.deadlineMs);
    if (request?.deadlineAt !== undefined && request.deadlineAt < deadlineAt) deadlineAt = request.deadlineAt;
    // A dependency met for the first time: its limits come with its first view, so wait for it (within
    // half of what is left of the deadline).
    if (this.fleet.policy === undefined && this.fleet.firstView) {
      await this.runtime.firstView(this.fleet, Math.floor((deadlineAt - clock.now()) / 2));
    }
    const call: Call = {
      deadlineAt,
      idempotent: opts.idempotent ?? this.options.idempotent,
      key: opts.idempotencyKey,
      signal,
      request,
      launched: 0,
      cost,
    };
    let lastError: unknown = undefined;
    for (;;) {
      const now = clock.now();
      if (deadlineAt <= now) throw this.giveUp(call, new DeadlineExceededError(this.name, lastError, call.launched));
      const state = this.runtime.breakerState(this.fleet, now);
      let admission = NO_ADMISSION;
      let start = now;
      if (this.fleet.limited || (state !== 'closed' && state !== 'forced_closed')) {
        admission = await this.admit(call, state, lastError);
        if (signal?.aborted) {
          this.abandon(admission);
          throw signal.reason;
        }
        start = clock.now();
      }
      try {
        return await this.round(fn, call, admission, start);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        lastError = error;
        await this.backOff(call, error);
      }
    }
  }

  /**
   * `fetch` under this policy: statuses mapped (408, 429 and 5xx are failures; other statuses
   * resolve), `Retry-After` honoured, `Idempotency-Key` sent when asked, every attempt aborted at
   * the deadline, and a connect timeout.
   * @example
   * const res = await payments.fetch('http://payments/charges', {
   *   method: 'POST',
   *   headers: { 'content-type': 'application/json' },
   *   body: JSON.stringify(charge),
   *   idempotencyKey: charge.id,
   * });
   */
  fetch(input: string | URL, init?: SluiceFetchInit): Promise<Response> {
    return fetchThrough(this, this.runtime.agents, input, init);
  }

  /**
   * Lets an attempt out when the breaker is not closed (only as a probe of a half-open one) or the
   * dependency is limited: the coordinator's admit decides, or the fallback when it cannot answer.
   * A limit's refusal is waited out within the deadline (`whenLimited: 'wait'`) or thrown.
   */
  private async admit(call: Call, state: BreakerState, lastError: unknown): Promise<Admission> {
    const { clock, link } = this.runtime;
    for (let refusals = 1; ; refusals++) {
      if (!this.fleet.limited && (state === 'closed' || state === 'forced_closed')) return NO_ADMISSION;
      if (state === 'open' || state === 'forced_open') {
        throw this.giveUp(call, new BreakerOpenError(this.name, state, lastError, call.launched));
      }
      let outcome = link.fallback ? undefined : await this.askFleet(call, lastError);
      if (outcome === undefined) {
        // The coordinator is away, or did not answer: the fallback decides.
        state = this.runtime.breakerState(this.fleet, clock.now());
        outcome = this.admitLocally(call, state, lastError);
      }
      if (!('reason' in outcome)) return outcome;
      await this.waitLimited(call, outcome, refusals, lastError);
      state = this.runtime.breakerState(this.fleet, clock.now());
    }
  }

  /**
   * The coordinator's admission: the probe and lease it grants, a limit's refusal (a breaker's
   * refusal is thrown), or undefined when it does not answer.
   */
  private async askFleet(call: Call, lastError: unknown): Promise<Admission | Refusal | undefined> {
    // Attempts the fallback let out hold no lease: while they run, the fleet undercounts this process.
    const held = this.fleet.limited ? this.fleet.localLimits.whileUnleased() : undefined;
    if (held) return held;
    const verdict = await this.runtime.admit(this.fleet, this.checkedCost(call));
    if (!verdict) return undefined;
    if (verdict.allow) return this.unheldGrant(verdict) ?? this.admitted(call, verdict);
    if (verdict.reason === 'rate_limited' || verdict.reason === 'concurrency_limited') {
      return { reason: verdict.reason, retryAfterMs: verdict.retryAfterMs };
    }
    throw this.giveUp(call, new BreakerOpenError(this.name, verdict.state, lastError, call.launched));
  }

  /**
   * A fleet grant this process cannot take up: the fallback let attempts out meanwhile (they hold
   * no lease, so the fleet did not count them) and the local count is full. The lease goes back,
   * and the local refusal stands.
   */
  private unheldGrant(verdict: AdmitVerdict): Refusal | undefined {
    if (!verdict.lease || !this.fleet.limited) return undefined;
    const refusal = this.fleet.localLimits.whileUnleased();
    if (refusal) this.runtime.leases.releaseUnheld(this.name, verdict.lease.id);
    return refusal;
  }

  /** The fleet admitted an attempt: its probe token and lease, and the local limits kept warm. */
  private admitted(call: Call, verdict: AdmitVerdict): Admission {
    const probe = verdict.probeToken === undefined ? undefined : { token: verdict.probeToken };
    const slot =
      this.fleet.limited && this.fleet.localLimits.granted(this.runtime.clock.now(), call.cost) ? 'leased' : undefined;
    let lease: LeaseHold | undefined;
    if (verdict.lease) {
      const leaseMs =
        this.fleet.policy?.concurrency?.leaseMs ?? Math.max(100, verdict.lease.expiresAt - verdict.askedAt);
      lease = this.runtime.leases.hold(this.name, verdict.lease.id, leaseMs, verdict.askedAt);
    }
    return { probe, permit: lease || slot ? { lease, slot } : undefined };
  }

  /**
   * The fallback's admission while the coordinator cannot answer: the breaker as the fallback sees
   * it, and a limited dependency's limits by the fallback mode (`local`: kept locally; `fail-open`:
   * unchecked, said once; `fail-closed`: refused).
   */
  private admitLocally(call: Call, state: BreakerState, lastError: unknown): Admission | Refusal {
    const now = this.runtime.clock.now();
    if (state === 'open' || state === 'forced_open') {
      throw this.giveUp(call, new BreakerOpenError(this.name, state, lastError, call.launched));
    }
    let permit: Permit | undefined;
    if (this.fleet.limited) {
      switch (this.runtime.fallbackMode) {
        case 'local': {
          const local = this.fleet.localLimits.admit(now, call.cost);
          if (!local.allow) return local;
          if (local.slot) permit = { lease: undefined, slot: 'local' };
          break;
        }
        case 'fail-open':
          this.runtime.limitsUnchecked(this.fleet);
          break;
        case 'fail-closed':
          throw this.giveUp(call, new GiveUpError(this.name, 'coordinator_unavailable', lastError, call.launched));
      }
    }
    if (state !== 'half_open') return { probe: undefined, permit };
    if (this.runtime.tryLocalProbe(this.fleet, now)) return { probe: LOCAL_PROBE, permit };
    if (permit) this.releasePermit(permit);
    throw this.giveUp(call, new BreakerOpenError(this.name, state, lastError, call.launched));
  }

  /**
   * After a limit's refusal (the `n`th of this admission): waits before asking again, or throws a
   * LimitedError when the dependency is set to fail at once or the wait would not end before the
   * deadline. A rate limit's `retryAfterMs` is exact; a concurrency limit's is the earliest lease
   * expiry, while slots are usually freed much sooner, so the wait is a jittered backoff below it,
   * cut short when one of this process's attempts gives its slot back (first come, first woken).
   */
  private async waitLimited(call: Call, refusal: Refusal, n: number, lastError: unknown): Promise<void> {
    const { clock, random } = this.runtime;
    const retryAfterMs = Math.max(0, Math.ceil(refusal.retryAfterMs));
    let waitMs = retryAfterMs;
    if (refusal.reason === 'concurrency_limited') {
      const backoff = this.fleet.policy?.backoff ?? this.fleet.fallbackPolicy.backoff;
      waitMs = Math.min(retryAfterMs, backoffDelay(backoff, { attempt: n }, random));
    }
    waitMs = Math.max(1, waitMs);
    if (this.options.whenLimited === 'fail' || clock.now() + waitMs >= call.deadlineAt) {
      throw this.giveUp(call, new LimitedError(this.name, refusal.reason, retryAfterMs, lastError, call.launched));
    }
    if (refusal.reason === 'concurrency_limited') await this.fleet.waitForSlot(waitMs, call.signal);
    else await sleep(waitMs, call.signal);
  }

  /** The call's cost, checked against the rate limit's burst when one is known (the coordinator refuses more as bad input). */
  private checkedCost(call: Call): number {
    const burst = this.fleet.policy?.rateLimit?.burst;
    if (burst !== undefined && call.cost > burst) {
      throw new RangeError(`${this.name}: a cost of ${call.cost} exceeds the rate limit's burst (${burst})`);
    }
    return call.cost;
  }

  /**
   * Gives back what an attempt held: its local slot, and its lease (released, not waited for).
   * Once the slot is back (the release answered, for a lease), this process's first call waiting
   * for one asks again.
   */
  private releasePermit(permit: Permit): void {
    const fleet = this.fleet;
    if (permit.slot) fleet.localLimits.release(permit.slot === 'local');
    if (permit.lease) this.runtime.leases.release(permit.lease, () => fleet.slotReleased());
    else fleet.slotReleased();
  }

  /** An admission that will not be used (the caller aborted meanwhile). */
  private abandon(admission: Admission): void {
    if (admission.permit) this.releasePermit(admission.permit);
    if (admission.probe === LOCAL_PROBE) this.fleet.local.releaseProbe();
  }

  /** One round: an attempt, and its hedge when hedging applies. */
  private round<T>(
    fn: (context: AttemptContext) => PromiseLike<T> | T,
    call: Call,
    { probe, permit }: Admission,
    start: number,
  ): Promise<T> {
    const hedge = this.options.hedge;
    if (!hedge || !call.idempotent || probe !== undefined) {
      return this.attempt(fn, call, probe, permit, false, start).promise;
    }
    return this.hedgedRound(fn, call, permit, hedgeDelayMs(this.fleet.latency?.p95, hedge), start);
  }

  /**
   * Sends one attempt within its timeout, records its outcome, reports a probe's at once, and gives
   * back its permit (lease, local slot) when it settles.
   */
  private attempt<T>(
    fn: (context: AttemptContext) => PromiseLike<T> | T,
    call: Call,
    probe: Probe | undefined,
    permit: Permit | undefined,
    hedge: boolean,
    start: number,
  ): { handle: Attempt; promise: Promise<T> } {
    const { clock, timeouts } = this.runtime;
    const fleet = this.fleet;
    const number = ++call.launched;
    if (number === 1) fleet.recordRequest(start);
    const timeoutMs = Math.max(1, Math.min(this.attemptTimeoutMs, call.deadlineAt - start));
    const handle = new Attempt(number, timeoutMs, call.key, hedge);
    const signal = call.signal;
    const promise = new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (error: unknown, value: T | undefined, ok: boolean) => {
        if (settled) return;
        settled = true;
        timeouts.delete(handle);
        if (permit) this.releasePermit(permit);
        if (signal) signal.removeEventListener('abort', onAbort);
        const now = clock.now();
        if (!handle.abandoned) {
          const failed = !ok && isDependencyFailure(classify(error, this.options.classifiers));
          fleet.recordOutcome(now, now - start, failed);
          if (probe !== undefined) this.probeDone(probe, !failed);
        } else if (probe === LOCAL_PROBE) {
          fleet.local.releaseProbe();
        }
        if (ok) resolve(value as T);
        else reject(error);
      };
      handle.expiresAt = (clock === systemClock ? start : Date.now()) + timeoutMs;
      handle.expire = () => {
        const error = new AttemptTimeoutError(timeoutMs);
        handle.abort(error);
        finish(error, undefined, false);
      };
      timeouts.add(handle);
      handle.cancel = (reason: unknown) => {
        handle.abandoned = true;
        handle.abort(reason);
        finish(reason, undefined, false);
      };
      const onAbort = () => handle.cancel(signal!.reason);
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      let result: PromiseLike<T> | T;
      try {
        result = fn(handle);
      } catch (error) {
        finish(error, undefined, false);
        return;
      }
      if (result !== null && typeof (result as PromiseLike<T>)?.then === 'function') {
        (result as PromiseLike<T>).then(
          (value) => finish(undefined, value, true),
          (error: unknown) => finish(error, undefined, false),
        );
      } else {
        finish(undefined, result as T, true);
      }
    });
    return { handle, promise };
  }

  private probeDone(probe: Probe, success: boolean): void {
    if (probe === LOCAL_PROBE) this.fleet.local.probeOutcome(success, this.runtime.clock.now());
    else this.runtime.reportProbe(this.fleet, probe.token, success);
  }

  /**
   * The first attempt, and after `delayMs` without an answer a second one (if the budget grants it
   * as a retry); the first success wins and the other attempt is aborted.
   */
  private hedgedRound<T>(
    fn: (context: AttemptContext) => PromiseLike<T> | T,
    call: Call,
    permit: Permit | undefined,
    delayMs: number,
    start: number,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const running: Attempt[] = [];
      let pending = 0;
      let settled = false;
      let hedging: 'waiting' | 'deciding' | 'done' = 'waiting';
      let lastError: unknown;
      const settle = (ok: boolean, value?: T) => {
        settled = true;
        clearTimeout(timer);
        for (const attempt of [...running])
          attempt.cancel(new DOMException('another attempt answered first', 'AbortError'));
        if (ok) resolve(value as T);
        else reject(lastError);
      };
      const forget = (handle: Attempt) => {
        const index = running.indexOf(handle);
        if (index >= 0) running.splice(index, 1);
      };
      const launch = (hedge: boolean, held: Permit | undefined) => {
        pending++;
        const at = hedge ? this.runtime.clock.now() : start;
        const { handle, promise } = this.attempt(fn, call, undefined, held, hedge, at);
        running.push(handle);
        promise.then(
          (value) => {
            forget(handle);
            if (!settled) settle(true, value);
          },
          (error: unknown) => {
            forget(handle);
            pending--;
            lastError = error;
            if (settled || pending > 0) return;
            if (hedging === 'waiting') {
              hedging = 'done';
              settle(false);
            } else if (hedging === 'done') {
              settle(false);
            }
          },
        );
      };
      const timer = setTimeout(async () => {
        hedging = 'deciding';
        const remaining = call.deadlineAt - this.runtime.clock.now();
        const verdict =
          remaining > 0 && call.launched < this.options.maxAttempts
            ? await this.runtime.decideRetry(this.fleet, {
                attempt: call.launched,
                idempotent: true,
                deadlineMs: Math.floor(remaining),
              })
            : undefined;
        // A limited dependency's hedge is admitted like any attempt, but never waits for a slot.
        const admitted = verdict?.allow && !settled && this.fleet.limited ? await this.admitHedge(call) : undefined;
        hedging = 'done';
        if (settled) {
          if (admitted) this.releasePermit(admitted);
          return;
        }
        if (verdict?.allow && admitted !== false && call.deadlineAt > this.runtime.clock.now()) {
          this.emitRetry({
            dependency: this.name,
            attempt: call.launched + 1,
            delayMs: 0,
            error: undefined,
            hedge: true,
          });
          launch(true, admitted);
        } else {
          if (admitted) this.releasePermit(admitted);
          if (pending === 0) settle(false);
        }
      }, delayMs);
      launch(false, permit);
    });
  }

  /** A hedge's admission to a limited dependency, asked once: its permit, or false when refused. */
  private async admitHedge(call: Call): Promise<Permit | undefined | false> {
    if (!this.runtime.link.fallback) {
      if (this.fleet.localLimits.whileUnleased()) return false;
      const verdict = await this.runtime.admit(this.fleet, call.cost);
      if (verdict) return verdict.allow && !this.unheldGrant(verdict) && this.admitted(call, verdict).permit;
    }
    switch (this.runtime.fallbackMode) {
      case 'local': {
        const local = this.fleet.localLimits.admit(this.runtime.clock.now(), call.cost);
        return local.allow && (local.slot ? { lease: undefined, slot: 'local' } : undefined);
      }
      case 'fail-open':
        this.runtime.limitsUnchecked(this.fleet);
        return undefined;
      case 'fail-closed':
        return false;
    }
  }

  /**
   * After a failed round: gives up (throws) or waits the granted backoff. A failure that is not
   * retriable at all is rethrown as it is.
   */
  private async backOff(call: Call, error: unknown): Promise<void> {
    const { clock } = this.runtime;
    const failure = classify(error, this.options.classifiers);
    const denial = retryDenial(failure, call.idempotent, call.key !== undefined);
    if (denial === 'not_retriable') throw error;
    const giveUp = (reason: GiveUpReason) =>
      this.giveUp(call, new GiveUpError(this.name, reason, error, call.launched));
    if (denial) throw giveUp(denial);
    if (failure.retriedDownstream) throw giveUp('downstream_retried');
    if (call.launched >= this.options.maxAttempts) throw giveUp('max_attempts');
    if (call.request && call.request.attempt > 1 && !this.options.retryWhenServingRetry) throw giveUp('upstream_retry');
    const remaining = call.deadlineAt - clock.now();
    if (remaining <= 0) throw this.giveUp(call, new DeadlineExceededError(this.name, error, call.launched));
    const verdict = await this.runtime.decideRetry(this.fleet, retryRequest(call.launched, remaining, failure));
    if (!verdict.allow) {
      if (verdict.reason === 'breaker_open') {
        throw this.giveUp(call, new BreakerOpenError(this.name, verdict.breakerState ?? 'open', error, call.launched));
      }
      if (verdict.reason === 'deadline_exceeded') {
        throw this.giveUp(call, new DeadlineExceededError(this.name, error, call.launched));
      }
      throw giveUp(verdict.reason as GiveUpReason);
    }
    const delayMs = Math.max(verdict.delayMs, Math.ceil(failure.retryAfterMs ?? 0));
    if (clock.now() + delayMs >= call.deadlineAt) {
      throw this.giveUp(call, new DeadlineExceededError(this.name, error, call.launched));
    }
    this.emitRetry({ dependency: this.name, attempt: call.launched + 1, delayMs, error, hedge: false });
    await sleep(delayMs, call.signal);
  }

  private emitRetry(event: RetryEvent): void {
    this.retries.emit(event);
    this.forward.retry.emit(event);
  }

  /** Announces a give-up and tells the caller of the request being served not to retry it. */
  private giveUp(call: Call, error: GiveUpError): GiveUpError {
    const event = { dependency: this.name, reason: error.reason, error };
    this.giveUps.emit(event);
    this.forward.giveUp.emit(event);
    if (error.reason !== 'not_idempotent') call.request?.pushback?.(error.reason);
    return error;
  }
}

/** The body of POST /retry for a failure after `launched` attempts. */
function retryRequest(launched: number, remainingMs: number, failure: Failure): RetryRequest {
  return {
    attempt: Math.min(launched, MAX_RETRY_ATTEMPT),
    idempotent: true,
    deadlineMs: Math.min(Math.floor(remainingMs), MAX_DURATION_MS),
    ...(failure.status !== undefined ? { status: failure.status } : { error: failure.error ?? 'other' }),
    ...(failure.retryAfterMs ? { retryAfterMs: Math.min(Math.ceil(failure.retryAfterMs), MAX_DURATION_MS) } : {}),
  };
}
