import type { BreakerTransition } from '@sluice/core';
import {
  DEFAULT_DEPENDENCY_POLICY,
  mergeDependencyPolicy,
  type BreakerState,
  type DependencyPolicy,
  type DependencyPolicyOverride,
  type DependencyReport,
  type DependencyView,
  type LatencySummary,
  type ProbeOutcome,
} from '@sluice/protocol';
import type { BreakerFacts } from '../errors';
import { EventEmitter } from '../events';
import { HeldDenial } from './held-denial';
import { KeptProbes } from './kept-probes';
import { LocalGuard } from './local-guard';
import { LocalLimits } from './local-limits';
import { PendingReport } from './pending-report';
import { SlotGate } from './slot-gate';

/**
 * A breaker state change as the SDK sees it: pushed by the fleet (`fleet`), or made by the local
 * fallback breaker (`local`).
 * @example
 * sluice.onBreak(({ dependency, from, to, source }) => log.warn(`${dependency}: ${from} → ${to} (${source})`));
 */
export interface BreakerChange {
  dependency: string;
  from: BreakerState;
  to: BreakerState;
  source: 'fleet' | 'local';
}

/** What a breaker's answer may say besides its state (a view, an event, a decision's `breaker`). */
export interface BreakerWord {
  state: BreakerState;
  openUntil?: number | null;
  reason?: string | null;
}

/**
 * Everything one process knows about one dependency, shared by every policy built for it: the
 * fleet's view (breaker state pushed over SSE or polled, policy, latency), kept here; the counts
 * waiting for the next report, which also feed the local fallback guard (pending-report.ts); the
 * local fallback guard and limits; and the calls waiting for a concurrency slot (slot-gate.ts).
 */
export class FleetDependency {
  /** The fleet breaker state last pushed or read; undefined until the first one arrives (treated as closed). */
  state: BreakerState | undefined;
  openUntil: number | null = null;
  /** The operator's reason for a forced state, as the coordinator last said it. */
  breakerReason: string | null = null;
  /** The coordinator's policy and latency summary, from GET /deps/{dep}. */
  policy: DependencyPolicy | undefined;
  /**
   * True when the coordinator's policy has a rate or a concurrency limit: every attempt then asks
   * admit first. False (no per-call request) for any other policy, and while none is known.
   */
  limited = false;
  /** The first read of the view, while it is under way: calls wait for it (briefly) to learn the limits. */
  firstView: Promise<void> | undefined;
  latency: LatencySummary | undefined;
  etag: string | undefined;
  lastReadAt = Number.NEGATIVE_INFINITY;

  /** How many reporters the fleet has for this dependency, as the last report's answer said. */
  fleetSize: number | undefined;

  readonly local: LocalGuard;
  /** The fleet's last retry denial that said when to ask again, repeated locally while it holds. */
  readonly heldDenial = new HeldDenial();
  /** Fleet probes granted in answers that came too late for their call, for the next attempt to take. */
  readonly keptProbes = new KeptProbes();
  /** The local fallback's rate and concurrency limits. */
  readonly localLimits: LocalLimits;
  readonly changes = new EventEmitter<BreakerChange>();
  /** The counts waiting for the next report. */
  readonly pending: PendingReport;
  /** Calls of this process waiting for a concurrency slot. */
  private readonly slots = new SlotGate();
  private slowCallMs: number;
  private readonly localPolicy: () => DependencyPolicy;

  constructor(
    readonly name: string,
    /** The configured override of the local fallback's policy. */
    public fallbackOverride: DependencyPolicyOverride | undefined,
    /** The configured share of the fleet; undefined to learn it from the coordinator. */
    private readonly configuredShare: number | undefined,
  ) {
    let cachedFor: DependencyPolicy | undefined;
    let cachedOverride: DependencyPolicyOverride | undefined;
    let cached: DependencyPolicy | undefined;
    this.localPolicy = () => {
      const base = this.policy ?? DEFAULT_DEPENDENCY_POLICY;
      if (cachedFor !== base || cachedOverride !== this.fallbackOverride || !cached) {
        cachedFor = base;
        cachedOverride = this.fallbackOverride;
        cached = mergeDependencyPolicy(base, this.fallbackOverride);
      }
      return cached;
    };
    this.slowCallMs = this.localPolicy().breaker.slowCallMs;
    this.pending = new PendingReport(name, (now, requests, successes) => this.local.count(now, requests, successes));
    const share = () => this.share;
    this.local = new LocalGuard(
      this.localPolicy,
      share,
      (transition: BreakerTransition) => this.changes.emit({ dependency: name, ...transition, source: 'local' }),
      (now) => this.pending.feedLocal(now),
    );
    this.localLimits = new LocalLimits(this.localPolicy, share);
  }

  /**
   * This process's part of the fleet's budget floor and limits, for the local fallback: the
   * configured share, else 1 / the reporters the coordinator last counted (1 until it has said).
   */
  get share(): number {
    return this.configuredShare ?? 1 / Math.max(1, this.fleetSize ?? 1);
  }

  /**
   * The fallback takes over: its breaker starts from the fleet's last known state (when one is
   * known), so an open fleet breaker or an operator's trip holds, and a recovery the fleet saw is kept.
   */
  fallbackStarts(now: number): void {
    if (this.state !== undefined) this.local.adopt(this.fleetState(now), this.openUntil, now, this.breakerReason);
  }

  /** The policy the local fallback uses: the coordinator's when known, under the configured override. */
  get fallbackPolicy(): DependencyPolicy {
    return this.localPolicy();
  }

  /**
   * The fleet state as it stands now: the coordinator's breaker changes with time only when looked
   * at, so an `open` past its `openUntil` is half-open, and a lapsed forced state is closed.
   */
  fleetState(now: number): BreakerState {
    const state = this.state ?? 'closed';
    if (this.openUntil !== null && now >= this.openUntil) {
      if (state === 'open') return 'half_open';
      if (state === 'forced_open' || state === 'forced_closed') return 'closed';
    }
    return state;
  }

  /**
   * A state pushed over SSE, read from GET /deps, or returned by a report or a decision, with its
   * `openUntil` and the operator's `reason` when the answer carries them.
   */
  applyState(state: BreakerState, openUntil?: number | null, reason?: string | null): void {
    const previous = this.state ?? 'closed';
    if (state !== 'half_open') this.keptProbes.clear();
    this.state = state;
    if (openUntil !== undefined) this.openUntil = openUntil;
    else if (state !== previous) this.openUntil = null;
    if (reason !== undefined) this.breakerReason = reason;
    else if (state !== previous) this.breakerReason = null;
    if (state !== previous) this.changes.emit({ dependency: this.name, from: previous, to: state, source: 'fleet' });
  }

  /** A decision's or a view's `breaker`, with whatever it says of `openUntil` and the reason. */
  applyBreaker(breaker: BreakerWord): void {
    this.applyState(breaker.state, breaker.openUntil, breaker.reason);
  }

  /** What the fleet said last of the breaker, as it stands at `now`: for a {@link BreakerOpenError}. */
  breakerFacts(now: number): BreakerFacts {
    const state = this.fleetState(now);
    const forced = state === 'forced_open' || state === 'forced_closed';
    const openUntil = state === this.state ? this.openUntil : null;
    return {
      state,
      operatorReason: forced ? this.breakerReason : null,
      openUntil,
      retryAfterMs: openUntil === null ? null : Math.max(0, openUntil - now),
    };
  }

  applyView(view: DependencyView, etag: string | undefined, now: number): void {
    this.policy = view.policy;
    this.limited = Boolean(view.policy?.rateLimit || view.policy?.concurrency);
    this.latency = view.latency;
    this.etag = etag;
    this.lastReadAt = now;
    this.slowCallMs = this.localPolicy().breaker.slowCallMs;
    this.applyBreaker(view.breaker);
  }

  /** A first attempt went out. */
  recordRequest(now: number): void {
    this.pending.recordRequest(now);
  }

  /** A retry went out on this process's own grant, not the coordinator's. */
  recordOwnRetry(now: number): void {
    this.pending.recordOwnRetry(now);
  }

  /** A probe's outcome, reported so the coordinator settles its lease. */
  recordProbe(now: number, probe: ProbeOutcome): void {
    this.pending.recordProbe(now, probe);
  }

  /** A retry granted by the fleet or the fallback answered: reported, and given back to the local budget too. */
  recordRetrySucceeded(now: number): void {
    this.pending.recordRetrySucceeded(now);
    this.local.countRetrySucceeded(now);
  }

  /**
   * An attempt ended: `failed` when it was the dependency's failure. A failed or slow outcome goes
   * to the local guard at once, since it may open its breaker; a plain success in the next batch.
   */
  recordOutcome(now: number, latencyMs: number, failed: boolean): void {
    const slow = latencyMs >= this.slowCallMs;
    if (this.pending.recordOutcome(now, latencyMs, failed, slow)) this.local.recordOutcome(now, failed, slow);
  }

  /** The probes waiting for the next report. */
  get probes(): ProbeOutcome[] {
    return this.pending.probes;
  }

  /** When the oldest unreported count was taken; 0 when there is none. */
  get pendingSince(): number {
    return this.pending.pendingSince;
  }

  get hasPending(): boolean {
    return this.pending.hasPending;
  }

  /** Takes the pending counts as one report entry at `now` and starts afresh (the local guard keeps them). */
  takeReport(now: number): DependencyReport {
    return this.pending.take(now);
  }

  /** Puts back a report that could not be delivered (its probes are dropped: their leases expire). */
  restoreReport(report: DependencyReport, takenAt: number): void {
    this.pending.restore(report, takenAt);
  }

  /** Forgets pending counts at `now` (too old to matter to the fleet's window; the local guard keeps them). */
  dropPending(now: number): void {
    this.pending.take(now);
  }

  /**
   * Waits `ms` for a concurrency slot, or less: until one of this process's attempts gives its slot
   * back (see {@link slotReleased}; the first waiter is woken first). Rejects with the signal's reason.
   */
  waitForSlot(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return this.slots.wait(ms, signal);
  }

  /** A slot of this process was given back (its lease's release answered): the first waiter asks again. */
  slotReleased(): void {
    this.slots.released();
  }
}
