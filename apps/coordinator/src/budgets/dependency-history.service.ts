import { Inject, Injectable } from '@nestjs/common';
import { HISTORY_STEPS, HISTORY_STEP_SECONDS, budgetUse, type HistoryStep } from '@sluice/core';
import type { DependencyHistory, HistoryPoint } from '@sluice/protocol';
import type { DependencyRef, Store } from '@sluice/store';
import { STORE } from '../store/store.provider';

const STEP_MS = HISTORY_STEP_SECONDS * 1000;

/**
 * A dependency's last 15 minutes as the fleet reported it (the store keeps one step per 10 s,
 * written by the reports themselves): budget use, failure rate and breaker state per step.
 */
@Injectable()
export class DependencyHistoryService {
  constructor(@Inject(STORE) private readonly store: Store) {}

  async read(ref: DependencyRef): Promise<DependencyHistory> {
    const steps = await this.store.readHistory(ref);
    return {
      namespace: ref.namespace,
      dependency: ref.dependency,
      stepMs: STEP_MS,
      spanMs: HISTORY_STEPS * STEP_MS,
      points: steps.map(pointOf),
    };
  }
}

function pointOf(step: HistoryStep): HistoryPoint {
  const calls = step.successes + step.failures;
  return {
    at: step.at,
    calls,
    failureRate: calls === 0 ? 0 : step.failures / calls,
    slowRate: calls === 0 ? 0 : step.slow / calls,
    budget: step.budget,
    budgetUse: budgetUse(step.budget),
    state: step.state,
  };
}
