import { Injectable } from '@nestjs/common';
import { BREAKER_STATES } from '@sluice/protocol';
import type { BreakerSnapshot, DependencyRef } from '@sluice/store';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { ForcedStates } from './forced-states';

/**
 * Keeps sluice_breaker_state and sluice_breaker_transitions_total in step with every breaker seen
 * of a registered dependency (a breaker of a name nobody registered has no state to show), and
 * shows every breaker seen to the forced states this instance remembers.
 */
@Injectable()
export class BreakerMetrics {
  constructor(
    private readonly metrics: MetricsService,
    private readonly registry: DependencyRegistry,
    private readonly forcedStates: ForcedStates,
  ) {}

  observe(ref: DependencyRef, snapshot: BreakerSnapshot): void {
    this.forcedStates.observe(ref, snapshot.record);
    if (!this.registry.isRegistered(ref)) return;
    // Five gauge series per dependency: written when the state changes, not on every decision.
    const key = `${ref.namespace}/${ref.dependency}`;
    const shown = this.metrics.shownBreakerStates.get(key) === snapshot.record.state;
    // Most decisions change nothing: no labels built for them.
    if (shown && snapshot.transitions.length === 0) return;
    const labels = { namespace: ref.namespace, dependency: ref.dependency };
    for (const transition of snapshot.transitions) {
      this.metrics.breakerTransitions.inc({ ...labels, from: transition.from, to: transition.to });
    }
    if (shown) return;
    this.metrics.shownBreakerStates.set(key, snapshot.record.state);
    for (const state of BREAKER_STATES) {
      this.metrics.breakerState.set({ ...labels, state }, state === snapshot.record.state ? 1 : 0);
    }
  }
}
