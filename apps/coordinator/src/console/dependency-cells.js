// How one dependency's numbers are shown, in the fleet table and on its own page.

import { h } from './dom.js';
import { budgetUse, clock, isExhausted, millis, remaining } from './format.js';
import { stateBadge } from './widgets.js';

/** @typedef {import('@sluice/protocol').DependencyView} DependencyView */

/**
 * The state, and for a forced or open breaker until when (`until 15:20:00Z, 29 m more`), who forced
 * it (`by ops`, when known) and the operator's reason.
 * @param {{ state: import('@sluice/protocol').BreakerState, openUntil?: number | null, reason?: string | null, actor?: string | null }} breaker
 */
export function breakerCell(breaker) {
  const until = breaker.openUntil
    ? `until ${clock(breaker.openUntil)}, ${remaining(breaker.openUntil)} more`
    : breaker.state.startsWith('forced')
      ? 'until reset'
      : '';
  return h(
    'span',
    { class: 'breaker' },
    stateBadge(breaker.state),
    breaker.state === 'closed' ? null : h('small', { class: 'until' }, until),
    breaker.actor ? h('small', { class: 'actor' }, `by ${breaker.actor}`) : null,
    breaker.reason ? h('span', { class: 'reason' }, `“${breaker.reason}”`) : null,
  );
}

/**
 * retries / limit with a bar; under an adaptive budget, the retries that succeeded (given back) and
 * the cap too. An exhausted budget is marked in words as well as colour.
 * @param {(import('@sluice/protocol').BudgetView & { mode?: import('@sluice/protocol').BudgetMode }) | undefined} budget
 */
export function budgetCell(budget) {
  if (!budget) return '—';
  const use = Math.min(1, budgetUse(budget) ?? 0);
  const exhausted = isExhausted(budget);
  const adaptive = budget.mode !== 'fixed' && budget.cap !== undefined;
  return h(
    'span',
    { class: `budget${exhausted ? ' exhausted' : ''}` },
    h('span', {}, `${budget.retries} / ${budget.limit}`),
    h('meter', { min: 0, max: 1, low: 0.5, high: 0.8, optimum: 0, value: use, 'aria-hidden': 'true' }),
    adaptive ? h('small', {}, `${budget.retriesSucceeded ?? 0} succeeded, cap ${budget.cap}`) : null,
    exhausted ? h('strong', {}, 'exhausted') : null,
  );
}

/** The policy's rate and concurrency limits, each with what it holds now. */
/** @param {DependencyView | undefined} view */
export function limitsCell(view) {
  if (!view) return '—';
  const { rateLimit, concurrency } = view.policy;
  const usage = view.usage;
  const parts = [];
  if (rateLimit) {
    const left = usage?.rateRemaining ?? null;
    parts.push(
      `${rateLimit.rate} per ${millis(rateLimit.periodMs)}${rateLimit.burst ? `, burst ${rateLimit.burst}` : ''}` +
        (left === null ? '' : ` (${left} left)`),
    );
  }
  if (concurrency) {
    const held = usage ? `${usage.leases} of ` : 'at most ';
    parts.push(`${held}${concurrency.limit} in flight`);
  }
  return parts.length === 0 ? h('span', { class: 'muted' }, 'none') : parts.join(' · ');
}

/** @param {DependencyView['policy'] | undefined} policy */
export function modeCell(policy) {
  if (!policy) return '—';
  return policy.mode === 'shadow'
    ? h('span', { class: 'badge shadow', title: 'decides but does not enforce' }, 'shadow')
    : 'enforce';
}
