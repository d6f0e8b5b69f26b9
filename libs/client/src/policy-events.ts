import type { GiveUpError, GiveUpReason } from './errors';
import { EventEmitter, type Event } from './events';
import type { BreakerChange } from './fleet/fleet-dependency';

/**
 * A retry is about to happen.
 * @example
 * payments.onRetry(({ attempt, delayMs, error }) => log.info(`retry ${attempt} in ${delayMs} ms`, error));
 */
export interface RetryEvent {
  dependency: string;
  /** The number of the attempt about to go out. */
  attempt: number;
  /** The backoff before it, in ms (0 for a hedge). */
  delayMs: number;
  /** The error that caused it (undefined for a hedge). */
  error: unknown;
  hedge: boolean;
}

/**
 * A call gave up.
 * @example
 * payments.onGiveUp(({ reason }) => metrics.giveUps.inc({ reason }));
 */
export interface GiveUpEvent {
  dependency: string;
  reason: GiveUpReason;
  error: GiveUpError;
}

/**
 * The events of a policy: {@link Dependency} emits them for one dependency, {@link Sluice} for all.
 * @example
 * const watch = (events: PolicyEvents) => events.onGiveUp(({ dependency, reason }) => log.warn(dependency, reason));
 * watch(sluice);
 * watch(sluice.dependency('payments-api'));
 */
export abstract class PolicyEvents {
  protected readonly retries = new EventEmitter<RetryEvent>();
  protected readonly giveUps = new EventEmitter<GiveUpEvent>();
  private readonly breaks = new EventEmitter<BreakerChange>();
  private readonly resets = new EventEmitter<BreakerChange>();
  private readonly halfOpens = new EventEmitter<BreakerChange>();

  /**
   * Before each retry (and hedge).
   * @example
   * payments.onRetry(({ dependency, attempt, delayMs }) => console.log(`${dependency}: attempt ${attempt} in ${delayMs} ms`));
   */
  readonly onRetry: Event<RetryEvent> = this.retries.event;
  /**
   * When a call gives up.
   * @example
   * sluice.onGiveUp(({ dependency, reason }) => metrics.giveUps.inc({ dependency, reason }));
   */
  readonly onGiveUp: Event<GiveUpEvent> = this.giveUps.event;
  /**
   * When the breaker that governs calls opens (the fleet's, or the local one in fallback).
   * @example
   * payments.onBreak(({ to, source }) => console.log(`breaker ${to} (${source})`));
   */
  readonly onBreak: Event<BreakerChange> = this.breaks.event;
  /**
   * When the governing breaker closes again.
   * @example
   * sluice.onReset(({ dependency }) => console.log(`${dependency} is back`));
   */
  readonly onReset: Event<BreakerChange> = this.resets.event;
  /**
   * When the governing breaker becomes half-open.
   * @example
   * payments.onHalfOpen(() => console.log('probing payments-api'));
   */
  readonly onHalfOpen: Event<BreakerChange> = this.halfOpens.event;

  /** Announces a change of the governing breaker as a break, a half-open or a reset. */
  protected breakerChanged(change: BreakerChange): void {
    if (change.to === 'open' || change.to === 'forced_open') this.breaks.emit(change);
    else if (change.to === 'half_open') this.halfOpens.emit(change);
    else this.resets.emit(change);
  }
}
