// What the fleet page leads with: which rows need an operator first, and a one-line summary.

import { isExhausted } from './format.js';

/** How much a row needs an operator: forced or open breakers, then exhausted budgets, then the rest. */
export const URGENCY = { forcedOpen: 0, open: 1, halfOpen: 2, exhausted: 3, forcedClosed: 4, calm: 5 };

export function urgency(row) {
  const state = row.breaker.state;
  if (state === 'forced_open') return URGENCY.forcedOpen;
  if (state === 'open') return URGENCY.open;
  if (state === 'half_open') return URGENCY.halfOpen;
  if (isExhausted(row.view?.budget)) return URGENCY.exhausted;
  if (state === 'forced_closed') return URGENCY.forcedClosed;
  return URGENCY.calm;
}

/** "1 forced open · 2 open · 2 budgets exhausted", or that all is calm. */
export function incidentSummary(rows) {
  const count = (test) => rows.filter(test).length;
  const parts = [
    [count((row) => row.breaker.state === 'forced_open'), 'forced open', 'forced open'],
    [count((row) => row.breaker.state === 'open'), 'open', 'open'],
    [count((row) => row.breaker.state === 'half_open'), 'half-open', 'half-open'],
    [count((row) => isExhausted(row.view?.budget)), 'budget exhausted', 'budgets exhausted'],
    [count((row) => row.breaker.state === 'forced_closed'), 'forced closed', 'forced closed'],
  ]
    .filter(([n]) => n > 0)
    .map(([n, one, many]) => `${n} ${n === 1 ? one : many}`);
  if (parts.length > 0) return parts.join(' · ');
  return rows.length === 0 ? 'No dependency yet.' : `All ${rows.length} breakers closed, no budget exhausted.`;
}
