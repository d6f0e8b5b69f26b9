// Fleet: namespaces, then every dependency of one, live: breaker states over the event stream,
// budgets, rates and latency refreshed every few seconds. Sortable, filterable.

import { h, render } from '../dom.js';
import { describeError } from '../api.js';
import { keepLive, refreshFailed } from '../live.js';
import { readBreakers, readView, inBatches } from '../fleet-data.js';
import { budgetUse, clock, isExhausted, millis, percent, STATE_LABELS } from '../format.js';
import { isDegraded } from '../health.js';
import { readAudit } from '../audit-data.js';
import { URGENCY, incidentSummary, urgency } from '../incident.js';
import { listNamespaces } from '../namespaces.js';
import { notice, sortableTable } from '../widgets.js';
import { breakerCell, budgetCell, limitsCell, modeCell } from '../dependency-cells.js';

const VIEW_READS_AT_ONCE = 4;

export function fleetPage(container, params, { navigate }) {
  const stops = [];
  const namespaceList = h('nav', { class: 'namespaces', 'aria-label': 'Namespaces' });
  const content = h('section', { class: 'fleet', 'aria-labelledby': 'fleet-title' });
  render(container, h('div', { class: 'split' }, namespaceList, content));

  listNamespaces().then(
    (namespaces) => {
      const selected = params[0] ?? namespaces[0]?.namespace;
      render(
        namespaceList,
        h('h2', {}, 'Namespaces'),
        namespaces.length === 0
          ? h('p', {}, 'None yet: a namespace appears once a client reports or a policy is stored.')
          : h(
              'ul',
              {},
              namespaces.map((item) =>
                h(
                  'li',
                  {},
                  h(
                    'a',
                    {
                      href: `#/fleet/${encodeURIComponent(item.namespace)}`,
                      'aria-current': item.namespace === selected ? 'page' : null,
                    },
                    item.namespace,
                    h(
                      'span',
                      { class: 'count', 'aria-label': `${item.dependencies} dependencies` },
                      String(item.dependencies),
                    ),
                  ),
                ),
              ),
            ),
      );
      if (selected) stops.push(showNamespace(content, selected, navigate));
      else render(content, h('h1', { id: 'fleet-title' }, 'Fleet'));
    },
    (error) => render(content, h('h1', { id: 'fleet-title' }, 'Fleet'), notice('error', describeError(error))),
  );
  return () => stops.forEach((stop) => stop());
}

const COLUMNS = [
  {
    key: 'dependency',
    label: 'Dependency',
    value: (row) => row.dependency,
    cell: (row) => h('a', { href: row.href }, row.dependency),
  },
  // Sorted by how much it needs an operator, then by name: the incident leads the table.
  {
    key: 'state',
    label: 'Breaker',
    value: (row) => `${urgency(row)}:${row.dependency}`,
    cell: (row) => breakerCell(row.breaker),
  },
  {
    key: 'budget',
    label: 'Retries / limit',
    numeric: true,
    value: (row) => budgetUse(row.view?.budget),
    cell: (row) => budgetCell(row.view?.budget),
  },
  {
    key: 'failureRate',
    label: 'Failures',
    numeric: true,
    value: (row) => row.view?.breaker.failureRate,
    cell: (row) => percent(row.view?.breaker.failureRate),
  },
  {
    key: 'slowRate',
    label: 'Slow',
    numeric: true,
    value: (row) => row.view?.breaker.slowRate,
    cell: (row) => percent(row.view?.breaker.slowRate),
  },
  {
    key: 'calls',
    label: 'Calls',
    numeric: true,
    value: (row) => row.view?.breaker.calls,
    cell: (row) => row.view?.breaker.calls ?? '—',
  },
  {
    key: 'latency',
    label: 'p50 / p95 / p99',
    numeric: true,
    value: (row) => row.view?.latency.p99,
    cell: (row) =>
      row.view ? [row.view.latency.p50, row.view.latency.p95, row.view.latency.p99].map(millis).join(' / ') : '—',
  },
  {
    key: 'reporters',
    label: 'Reporters',
    numeric: true,
    value: (row) => row.view?.reporters,
    cell: (row) => row.view?.reporters ?? '—',
  },
  {
    key: 'limits',
    label: 'Rate / concurrency',
    value: (row) => Boolean(row.view?.policy.rateLimit || row.view?.policy.concurrency),
    cell: (row) => limitsCell(row.view),
  },
  { key: 'mode', label: 'Mode', value: (row) => row.view?.policy.mode, cell: (row) => modeCell(row.view?.policy) },
];

function showNamespace(content, namespace, navigate) {
  let stopped = false;
  const rows = new Map();
  const filters = { text: '', state: '', exhausted: false };
  const table = sortableTable({
    caption: `Dependencies of ${namespace}`,
    columns: COLUMNS,
    rowKey: (row) => row.dependency,
    sort: { key: 'state', ascending: true },
  });
  const summary = h('p', { class: 'incident-summary', role: 'status' });
  const forcedBy = new Map();
  const status = h('p', { class: 'status', 'aria-live': 'polite' });
  const problem = h('div');
  const streamLine = h('p');

  const draw = () => {
    for (const row of rows.values()) {
      row.breaker = {
        ...row.breaker,
        actor: row.breaker.state.startsWith('forced') ? forcedBy.get(row.dependency) : null,
      };
    }
    render(summary, incidentSummary([...rows.values()]));
    summary.classList.toggle(
      'calm',
      [...rows.values()].every((row) => urgency(row) === URGENCY.calm),
    );
    const text = filters.text.toLowerCase();
    table.update(
      [...rows.values()].filter(
        (row) =>
          row.dependency.includes(text) &&
          (!filters.state || row.breaker.state === filters.state) &&
          (!filters.exhausted || isExhausted(row.view?.budget)),
      ),
    );
    table.element.classList.toggle('stale', isDegraded());
  };

  const refresh = async () => {
    try {
      const breakers = await readBreakers(namespace);
      const views = await inBatches(breakers, VIEW_READS_AT_ONCE, (item) =>
        readView(namespace, item.dependency).catch(() => undefined),
      );
      if (stopped) return;
      const seen = new Set();
      breakers.forEach((item, index) => {
        seen.add(item.dependency);
        const view = views[index];
        rows.set(item.dependency, {
          dependency: item.dependency,
          href: hrefOf(namespace, item.dependency),
          // The event stream may already know a newer state than this read.
          breaker: newer(rows.get(item.dependency)?.breaker, {
            ...item,
            ...(view
              ? { state: view.breaker.state, since: view.breaker.since, openUntil: view.breaker.openUntil }
              : {}),
          }),
          view,
        });
      });
      for (const name of rows.keys()) if (!seen.has(name)) rows.delete(name);
      const forced = breakers.filter((item) => item.state.startsWith('forced'));
      if (forced.length > 0) await readForcedBy(namespace, forcedBy).catch(() => undefined);
      render(status, `${rows.size} dependencies · refreshed ${clock(Date.now())}`);
      render(problem);
    } catch (error) {
      if (stopped) return;
      render(problem, refreshFailed(error));
    }
    draw();
  };

  const openForm = h(
    'form',
    {
      class: 'open-dependency',
      onsubmit: (event) => {
        event.preventDefault();
        const name = event.target.elements.dependency.value.trim();
        if (name) navigate('deps', namespace, name);
      },
    },
    h('label', { for: 'open-dependency' }, 'Open a dependency by name'),
    h('input', { id: 'open-dependency', name: 'dependency', spellcheck: 'false', autocomplete: 'off' }),
    h('button', { type: 'submit' }, 'Open'),
  );

  render(
    content,
    h('h1', { id: 'fleet-title' }, `Fleet · ${namespace}`),
    summary,
    streamLine,
    h(
      'div',
      { class: 'filters', role: 'search' },
      h('label', { for: 'filter-text' }, 'Filter'),
      h('input', {
        id: 'filter-text',
        type: 'search',
        placeholder: 'dependency name',
        oninput: (event) => ((filters.text = event.target.value), draw()),
      }),
      h('label', { for: 'filter-state' }, 'Breaker'),
      h(
        'select',
        { id: 'filter-state', onchange: (event) => ((filters.state = event.target.value), draw()) },
        h('option', { value: '' }, 'any state'),
        Object.entries(STATE_LABELS).map(([value, label]) => h('option', { value }, label)),
      ),
      h(
        'label',
        { class: 'check' },
        h('input', { type: 'checkbox', onchange: (event) => ((filters.exhausted = event.target.checked), draw()) }),
        'budget exhausted only',
      ),
    ),
    problem,
    h('div', { class: 'table-wrap' }, table.element),
    status,
    openForm,
  );
  const live = keepLive({
    namespace,
    refresh,
    draw,
    onBreaker: (reading) => {
      const row = rows.get(reading.dependency);
      if (row) row.breaker = newer(row.breaker, reading);
      else
        rows.set(reading.dependency, {
          dependency: reading.dependency,
          href: hrefOf(namespace, reading.dependency),
          breaker: reading,
        });
      draw();
    },
  });
  render(streamLine, live.stream);
  return () => {
    stopped = true;
    live.stop();
  };
}

/** Who forced each forced breaker: the newest trip or force-close in the namespace's audit log. */
async function readForcedBy(namespace, forcedBy) {
  const entries = await readAudit({ namespace, limit: 200 });
  forcedBy.clear();
  for (const entry of entries) {
    if ((entry.action === 'breaker.trip' || entry.action === 'breaker.force_close') && !forcedBy.has(entry.target)) {
      forcedBy.set(entry.target, entry.actor);
    }
  }
}

const hrefOf = (namespace, dependency) => `#/deps/${encodeURIComponent(namespace)}/${encodeURIComponent(dependency)}`;

/** The later of two breaker readings (by `since`); an equal one keeps the reason it knows. */
function newer(known, read) {
  if (!known) return read;
  if ((read.since ?? 0) > (known.since ?? 0)) return read;
  if ((read.since ?? 0) < (known.since ?? 0)) return known;
  return { ...known, ...read, reason: read.reason ?? known.reason ?? null };
}
