import type { BreakerState, BudgetView } from '@sluice/protocol';

/**
 * A dependency's recent history, bounded: a ring of HISTORY_STEPS slots, one per step of
 * HISTORY_STEP_SECONDS (15 minutes at 10 s). Each report writes its step's slot: the outcomes it
 * reported are added to the step's, and the budget and the breaker are kept as the report left
 * them. A slot holding an older step is overwritten; a read keeps only the steps of the span that
 * ends with the current one. The Lua twin is libs/store/src/redis/lua/includes/history.lua.
 */

export const HISTORY_STEP_SECONDS = 10;
export const HISTORY_STEPS = 90;
/** How long a history lives after its last write: one step past the span, when none of it is read any more. */
export const HISTORY_TTL_SECONDS = HISTORY_STEP_SECONDS * (HISTORY_STEPS + 1);

/** One step of a dependency's history. */
export interface HistoryStep {
  /** The step's start, epoch ms (a multiple of HISTORY_STEP_SECONDS seconds). */
  at: number;
  /** Outcomes of the calls reported within the step. */
  successes: number;
  failures: number;
  slow: number;
  /** The budget window as the step's last report left it. */
  budget: BudgetView;
  /** The breaker's state after the step's last report. */
  state: BreakerState;
}

/** Slot → the step it holds; at most HISTORY_STEPS slots. */
export type HistoryRing = Map<number, HistoryStep>;

/** The first second of the step `second` falls in. */
export function historyStepStart(second: number): number {
  return second - (second % HISTORY_STEP_SECONDS);
}

/** Records one report in its step: its outcomes added, the budget and state as it leaves them. */
export function recordHistory(
  ring: HistoryRing,
  second: number,
  outcomes: { successes: number; failures: number; slow: number },
  budget: BudgetView,
  state: BreakerState,
): void {
  const start = historyStepStart(second);
  const slot = (start / HISTORY_STEP_SECONDS) % HISTORY_STEPS;
  const at = start * 1000;
  const kept = ring.get(slot);
  const same = kept?.at === at;
  ring.set(slot, {
    at,
    successes: outcomes.successes + (same ? kept.successes : 0),
    failures: outcomes.failures + (same ? kept.failures : 0),
    slow: outcomes.slow + (same ? kept.slow : 0),
    budget: { ...budget },
    state,
  });
}

/** The steps of the span that ends with the step of `second`, oldest first (a step ahead of it, left by a clock step back, is not). */
export function readHistory(ring: HistoryRing | undefined, second: number): HistoryStep[] {
  if (!ring) return [];
  const newest = historyStepStart(second) * 1000;
  const oldest = newest - (HISTORY_STEPS - 1) * HISTORY_STEP_SECONDS * 1000;
  return [...ring.values()]
    .filter((step) => step.at >= oldest && step.at <= newest)
    .sort((a, b) => a.at - b.at)
    .map((step) => ({ ...step, budget: { ...step.budget } }));
}

/** A share of a bound; 1 when the bound is 0 and something was counted. */
function shareOf(count: number, bound: number): number {
  if (bound === 0) return count > 0 ? 1 : 0;
  return count / bound;
}

/**
 * How much of a budget is used: the larger of the retries that did not succeed over the limit and
 * the retries over the cap (a fixed budget's cap is its limit, so it reads retries / limit). 1 or
 * more: no retry fits.
 */
export function budgetUse(budget: BudgetView): number {
  return Math.max(
    shareOf(Math.max(budget.retries - budget.retriesSucceeded, 0), budget.limit),
    shareOf(budget.retries, budget.cap),
  );
}
