import type { BreakerState } from '@sluice/protocol';
import type { EventEmitter } from './events';
import { CallPolicy } from './execute/call-policy';
import { run } from './execute/run';
import type { AttemptContext, ExecuteOptions } from './execute-options';
import { fetchThrough, type SluiceFetchInit } from './fetch';
import type { FleetDependency } from './fleet/fleet-dependency';
import type { ResolvedDependencyOptions } from './options';
import { PolicyEvents, type GiveUpEvent, type RetryEvent } from './policy-events';
import type { SluiceRuntime } from './runtime';

const NO_OPTIONS: ExecuteOptions = {};

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
  private readonly policy: CallPolicy;

  /** @internal Built by {@link Sluice.dependency}. */
  constructor(
    /** The dependency's name, as the coordinator knows it. */
    readonly name: string,
    /** The resolved options. */
    readonly options: ResolvedDependencyOptions,
    private readonly fleet: FleetDependency,
    private readonly runtime: SluiceRuntime,
    forward: { retry: EventEmitter<RetryEvent>; giveUp: EventEmitter<GiveUpEvent> },
  ) {
    super();
    this.policy = new CallPolicy(name, options, fleet, runtime, {
      retry: [this.retries, forward.retry],
      giveUp: [this.giveUps, forward.giveUp],
    });
    fleet.changes.event((change) => {
      if ((change.source === 'local') === runtime.decider.governedLocally) this.breakerChanged(change);
    });
  }

  /**
   * The breaker state that governs calls now: the fleet's, or the local one while in fallback.
   * @example
   * if (payments.breakerState === 'forced_open') showMaintenanceBanner();
   */
  get breakerState(): BreakerState {
    return this.runtime.decider.breakerState(this.fleet, this.runtime.clock.now());
  }

  /**
   * The per-attempt timeout now, in ms (the fixed one, or the automatic one from the fleet's p99).
   * @example
   * console.log(`attempts time out after ${payments.attemptTimeoutMs} ms`);
   */
  get attemptTimeoutMs(): number {
    return this.policy.attemptTimeoutMs;
  }

  /**
   * The hedge delay now, in ms; undefined when hedging is off.
   * @example
   * console.log(`hedging after ${search.hedgeDelayMs} ms`);
   */
  get hedgeDelayMs(): number | undefined {
    return this.policy.hedgeDelayMs;
  }

  /**
   * Runs `fn` under the policy. With a closed breaker the call goes straight out (no request to the
   * coordinator); a retriable failure waits out the dependency's Retry-After, if it sent one, then
   * asks the coordinator for one retry and waits its backoff; everything happens within the deadline.
   * When the coordinator's policy gives the dependency a rate or concurrency limit, each attempt
   * first asks `POST /admit` (with `cost`), holds the concurrency lease it gets until it settles,
   * and waits out a refusal within the deadline (see `whenLimited`).
   * Rejects with `fn`'s own error when it is not retriable (e.g. a 404), with a {@link GiveUpError}
   * (reason, and the last attempt's error as `cause`) when a retriable failure is not retried, with
   * a {@link BreakerOpenError} (state, operator's reason, `openUntil`, `retryAfterMs`) when the
   * breaker refused it, with a {@link LimitedError} when a limit refused it, with a
   * {@link ConfigError} when the client was made with `verify: true` and the coordinator refuses
   * its token, or with the signal's reason.
   * @example
   * const user = await users.execute(({ signal }) => api.getUser(id, { signal }), { idempotent: true });
   * @example
   * await payments.execute(({ headers }) => api.charge(order, { headers }), { idempotencyKey: order.id, signal });
   * @example
   * await geocoder.execute(({ signal }) => geocodeBatch(addresses, { signal }), { cost: addresses.length });
   */
  execute<T>(fn: (context: AttemptContext) => PromiseLike<T> | T, options?: ExecuteOptions | AbortSignal): Promise<T> {
    const opts = options === undefined ? NO_OPTIONS : options instanceof AbortSignal ? { signal: options } : options;
    return run(this.policy, fn, opts);
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
}
