// Reading a namespace's dependencies, a dependency's history as the coordinator keeps it, and the
// readings the page makes (kept for as long as the page is open: nothing of them is stored anywhere).

import { get, path } from './api.js';
import { budgetUse } from './format.js';

/** @typedef {import('@sluice/protocol').BreakerItem} BreakerItem */
/** @typedef {import('@sluice/protocol').BreakerList} BreakerList */
/** @typedef {import('@sluice/protocol').DependencyView} DependencyView */
/** @typedef {import('@sluice/protocol').DependencyHistory} DependencyHistory */

const HISTORY_MS = 10 * 60 * 1000;
const history = new Map();

/**
 * GET /admin/v1/{ns}/breakers: every dependency the namespace holds, with its breaker.
 * @param {string} namespace
 * @returns {Promise<BreakerItem[]>}
 */
export async function readBreakers(namespace) {
  /** @type {BreakerList} */
  const list = await get(path('admin', 'v1', namespace, 'breakers'));
  return list.items;
}

/**
 * GET /v1/{ns}/deps/{dep}: breaker, budget, latency, policy; remembered for the chart.
 * @param {string} namespace
 * @param {string} dependency
 * @returns {Promise<DependencyView>}
 */
export async function readView(namespace, dependency) {
  /** @type {DependencyView} */
  const view = await get(path('v1', namespace, 'deps', dependency));
  remember(namespace, dependency, view);
  return view;
}

/**
 * GET /v1/{ns}/deps/{dep}/history: the coordinator's last 15 minutes of the dependency, a point per
 * 10 s step that had reports, as the chart reads them (`{ at, budgetUse, failureRate, state }`).
 * @param {string} namespace
 * @param {string} dependency
 */
export async function readHistory(namespace, dependency) {
  /** @type {DependencyHistory} */
  const history = await get(path('v1', namespace, 'deps', dependency, 'history'));
  return history.points.map((point) => ({
    at: point.at,
    budgetUse: point.budgetUse,
    // A step whose reports had no calls measured no failure rate.
    failureRate: point.calls > 0 ? point.failureRate : null,
    state: point.state,
  }));
}

/** Runs `work` over `items`, at most `limit` at a time (the event stream holds one of the browser's connections). */
export async function inBatches(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * @param {string} namespace
 * @param {string} dependency
 * @param {DependencyView} view
 */
function remember(namespace, dependency, view) {
  const key = `${namespace}/${dependency}`;
  const samples = history.get(key) ?? [];
  const now = Date.now();
  samples.push({
    at: now,
    budgetUse: Math.min(1, budgetUse(view.budget) ?? 0),
    // A window without calls measures no failure rate (0 % of 0 calls is not a recovery).
    failureRate: view.breaker.calls > 0 ? view.breaker.failureRate : null,
    state: view.breaker.state,
  });
  while (samples.length > 0 && samples[0].at < now - HISTORY_MS) samples.shift();
  history.set(key, samples);
}

/** What the page has seen of one dependency, oldest first: `[{ at, budgetUse, failureRate, state }]`. */
export function samplesOf(namespace, dependency) {
  return history.get(`${namespace}/${dependency}`) ?? [];
}
