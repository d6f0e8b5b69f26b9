import { Injectable } from '@nestjs/common';
import type { BreakerState } from '@sluice/protocol';
import type { BreakerSnapshot, DependencyRef } from '@sluice/store';
import { MetricsService } from '../metrics/metrics.service';

const STATES: BreakerState[] = ['closed', 'open', 'half_open', 'forced_open', 'forced_closed'];

/** Keeps sluice_breaker_state and sluice_breaker_transitions_total in step with every breaker seen. */
@Injectable()
export class BreakerMetrics {
  constructor(private readonly metrics: MetricsService) {}

  observe(ref: DependencyRef, snapshot: BreakerSnapshot): void {
    const labels = { namespace: ref.namespace, dependency: ref.dependency };
    for (const transition of snapshot.transitions) {
      this.metrics.breakerTransitions.inc({ ...labels, from: transition.from, to: transition.to });
    }
    for (const state of STATES) {
      this.metrics.breakerState.set({ ...labels, state }, state === snapshot.record.state ? 1 : 0);
    }
  }
}
