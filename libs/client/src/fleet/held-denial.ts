import type { BreakerSummary } from '@sluice/protocol';

/** A retry denial of the fleet that this process repeats locally, without asking, while it holds. */
export interface HeldRefusal {
  reason: 'budget_exhausted' | 'breaker_open';
  /** The decision's breaker, for a `breaker_open` denial's facts. */
  breaker: BreakerSummary;
  /** Until when it holds (clock ms): the denial's `retryAfterMs` from when it came. */
  until: number;
}

/**
 * The last `budget_exhausted` or `breaker_open` retry denial of one dependency that said when to
 * ask again (`retryAfterMs`): it holds until then, or until a report taken after it reached the
 * coordinator (the report may have deposited what a grant needs), whichever comes first.
 * @example
 * held.hold({ reason: 'budget_exhausted', breaker, until: now + decision.retryAfterMs }, now);
 * held.current(now); // the refusal, until it lapses
 */
export class HeldDenial {
  private refusal: HeldRefusal | undefined;
  /** When it came (clock ms). */
  private since = 0;

  hold(refusal: HeldRefusal, now: number): void {
    this.refusal = refusal;
    this.since = now;
  }

  /** The refusal that holds now, if any. */
  current(now: number): HeldRefusal | undefined {
    const refusal = this.refusal;
    if (refusal === undefined) return undefined;
    if (now < refusal.until) return refusal;
    this.refusal = undefined;
    return undefined;
  }

  /** A report taken at `takenAt` reached the coordinator: a refusal that came before it lapses. */
  reported(takenAt: number): void {
    if (this.refusal !== undefined && this.since <= takenAt) this.refusal = undefined;
  }
}
