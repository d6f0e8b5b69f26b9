import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import type { BreakerRecord } from '@sluice/core';
import type { DependencyRef, ForcedBreakerState, Store, StoreEvent, Unsubscribe } from '@sluice/store';
import { STORE } from '../store/store.provider';
import { ResetWatcher } from '../store/reset-watcher';

/** Most forced states one instance remembers (operators force a handful). */
const MAX_REMEMBERED = 10_000;
/** A re-assertion the store could not take is tried again after this, at most RETRIES times. */
const RETRY_MS = 500;
const RETRIES = 20;
/** Who the audit log names for a re-assertion: the service itself, on the operator's behalf. */
export const REASSERT_ACTOR = 'sluice';
export const REASSERT_ACTION = 'breaker.reassert';

interface Remembered {
  ref: DependencyRef;
  forced: ForcedBreakerState;
  /** The dependency's event channel, followed while the state is remembered. */
  unsubscribe?: Promise<Unsubscribe | undefined>;
}

function isForced(state: BreakerRecord['state']): state is ForcedBreakerState['state'] {
  return state === 'forced_open' || state === 'forced_closed';
}

/**
 * The operators' forced states (trips and force-closes) this instance knows, so they outlive a
 * store that loses its data. Learned from every breaker the instance sees (its own admin calls,
 * decisions and reads, through BreakerMetrics) and from the event channels of the dependencies it
 * remembers; forgotten when the breaker is seen reset or lapsed after the forced state began (a
 * reset on any instance is published to every instance following the dependency), or once the
 * state's expiry has passed. After a store reset (ResetWatcher) each is asserted again with its
 * own reason and absolute expiry, idempotently (reassert_breaker-4.lua: a state already asserted
 * by another instance, or one reset since, is left alone), and each assertion that changed the
 * store is written to the audit log.
 */
@Injectable()
export class ForcedStates implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Breakers');
  private readonly known = new Map<string, Remembered>();

  constructor(
    @Inject(STORE) private readonly store: Store,
    watcher: ResetWatcher,
  ) {
    watcher.onReset(() => this.reassertAll());
  }

  /** What this instance sees of a breaker: a forced state is remembered, a reset or lapse after it forgets it. */
  observe(ref: DependencyRef, record: Pick<BreakerRecord, 'state' | 'since' | 'openUntil' | 'reason'>): void {
    const key = `${ref.namespace}/${ref.dependency}`;
    const current = this.known.get(key);
    if (isForced(record.state) && record.since !== null) {
      if (current && current.forced.since >= record.since) return;
      const { state, since, openUntil } = record;
      this.remember(key, { ref, forced: { state, since, openUntil, reason: record.reason ?? '' } });
      return;
    }
    // A breaker that never left closed (no `since`) has lost its record: the forced state stands.
    if (current && record.state === 'closed' && record.since !== null && record.since >= current.forced.since) {
      this.forget(key);
    }
  }

  /** The forced states remembered now (lapsed ones dropped). */
  remembered(now = Date.now()): Array<{ ref: DependencyRef; forced: ForcedBreakerState }> {
    for (const [key, { forced }] of this.known) if (lapsed(forced, now)) this.forget(key);
    return [...this.known.values()].map(({ ref, forced }) => ({ ref, forced }));
  }

  /** Asserts every remembered forced state again; those the store could not take are retried. */
  async reassertAll(attempt = 1): Promise<void> {
    const pending = this.remembered();
    const failed = (await Promise.all(pending.map((entry) => this.reassert(entry)))).filter((ok) => !ok);
    if (failed.length === 0) return;
    if (attempt >= RETRIES) {
      this.logger.error(`could not assert ${failed.length} forced breaker state(s) again after a store reset`);
      return;
    }
    setTimeout(() => void this.reassertAll(attempt + 1), RETRY_MS).unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    const watches = [...this.known.values()].map((entry) => entry.unsubscribe);
    this.known.clear();
    await Promise.all(watches.map((watch) => watch?.then((unsubscribe) => unsubscribe?.()).catch(() => undefined)));
  }

  /** One re-assertion; false when the store could not be asked (to be retried). */
  private async reassert({ ref, forced }: { ref: DependencyRef; forced: ForcedBreakerState }): Promise<boolean> {
    try {
      const { applied, snapshot } = await this.store.reassertBreaker(ref, forced);
      // The namespace's forced set may sit on a shard the reset emptied, even when the breaker's did not.
      await this.store.keepForcedListed(ref, snapshot.record);
      if (!applied) return true;
      const until = forced.openUntil === null ? 'until reset' : `until ${new Date(forced.openUntil).toISOString()}`;
      this.logger.warn(
        `asserted ${forced.state} of ${ref.namespace}/${ref.dependency} again after a store reset (${until}): ${forced.reason}`,
      );
      await this.store.appendAudit({
        actor: REASSERT_ACTOR,
        action: REASSERT_ACTION,
        namespace: ref.namespace,
        target: ref.dependency,
        reason: forced.reason,
      });
      return true;
    } catch {
      return false;
    }
  }

  private remember(key: string, entry: Remembered): void {
    const previous = this.known.get(key);
    this.known.delete(key);
    entry.unsubscribe = previous?.unsubscribe ?? this.follow(entry.ref);
    this.known.set(key, entry);
    while (this.known.size > MAX_REMEMBERED) this.forget(this.known.keys().next().value as string);
  }

  private forget(key: string): void {
    const entry = this.known.get(key);
    this.known.delete(key);
    void entry?.unsubscribe?.then((unsubscribe) => unsubscribe?.()).catch(() => undefined);
  }

  /** Follows the dependency's channel, so a reset or a new trip made on another instance is heard here. */
  private follow(ref: DependencyRef): Promise<Unsubscribe | undefined> {
    const onEvent = (event: StoreEvent) => {
      if (event.type !== 'breaker') return;
      const reason = 'reason' in event && typeof event.reason === 'string' ? event.reason : null;
      this.observe(ref, { state: event.state, since: event.since, openUntil: event.openUntil, reason });
    };
    return this.store.subscribeDependency(ref, onEvent).catch(() => undefined);
  }
}

function lapsed(forced: ForcedBreakerState, now: number): boolean {
  return forced.openUntil !== null && forced.openUntil <= now;
}
