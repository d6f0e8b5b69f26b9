// Audit: who did what, when and why, newest first; filtered by namespace (asked of the API),
// action, actor and text (in the page).

import { h, render } from '../dom.js';
import { describeError } from '../api.js';
import { readAudit } from '../audit-data.js';
import { dateTime, forcedFor } from '../format.js';
import { listNamespaces } from '../namespaces.js';
import { field, notice, sortableTable } from '../widgets.js';

const COLUMNS = [
  { key: 'at', label: 'When', value: (entry) => entry.at, cell: (entry) => dateTime(entry.at) },
  { key: 'actor', label: 'Who', value: (entry) => entry.actor, cell: (entry) => entry.actor },
  { key: 'action', label: 'Action', value: (entry) => entry.action, cell: (entry) => h('code', {}, entry.action) },
  { key: 'namespace', label: 'Namespace', value: (entry) => entry.namespace, cell: (entry) => entry.namespace },
  { key: 'target', label: 'Target', value: (entry) => entry.target, cell: (entry) => entry.target },
  {
    key: 'lasting',
    label: 'For',
    value: (entry) => entry.durationMs ?? (forcedFor(entry) ? Number.POSITIVE_INFINITY : -1),
    cell: (entry) => forcedFor(entry) ?? h('span', { class: 'muted' }, '—'),
  },
  {
    key: 'reason',
    label: 'Why',
    value: (entry) => entry.reason ?? '',
    cell: (entry) => entry.reason ?? h('span', { class: 'muted' }, '—'),
  },
];

export function auditPage(container, params) {
  const filters = { namespace: params[0] ?? '', action: '', actor: '', text: '' };
  const table = sortableTable({
    caption: 'Audit log',
    columns: COLUMNS,
    rowKey: (entry) => `${entry.at}-${entry.action}-${entry.target}`,
    sort: { key: 'at', ascending: false },
  });
  const problem = h('div');
  const count = h('p', { class: 'status', 'aria-live': 'polite' });
  const actions = h('select', {
    id: 'audit-action',
    onchange: (event) => ((filters.action = event.target.value), draw()),
  });
  let entries = [];

  const draw = () => {
    const text = filters.text.toLowerCase();
    const shown = entries.filter(
      (entry) =>
        (!filters.action || entry.action === filters.action) &&
        (!filters.actor || entry.actor.includes(filters.actor)) &&
        (!text || `${entry.target} ${entry.reason ?? ''}`.toLowerCase().includes(text)),
    );
    table.update(shown);
    render(count, `${shown.length} of ${entries.length} entries`);
  };

  const load = async () => {
    try {
      entries = await readAudit({ namespace: filters.namespace || undefined, limit: 1000 });
      render(problem);
      const names = [...new Set(entries.map((entry) => entry.action))].sort();
      render(
        actions,
        h('option', { value: '' }, 'any action'),
        names.map((name) => h('option', { value: name, selected: name === filters.action }, name)),
      );
    } catch (error) {
      entries = [];
      render(problem, notice('error', describeError(error)));
    }
    draw();
  };

  const namespaces = h(
    'select',
    { id: 'audit-namespace', onchange: (event) => ((filters.namespace = event.target.value), void load()) },
    h('option', { value: '' }, 'every namespace'),
  );
  listNamespaces().then(
    (items) =>
      items.forEach((item) =>
        namespaces.append(
          h('option', { value: item.namespace, selected: item.namespace === filters.namespace }, item.namespace),
        ),
      ),
    () => undefined,
  );
  render(
    container,
    h('h1', {}, 'Audit'),
    h(
      'form',
      { class: 'row filters', role: 'search', onsubmit: (event) => event.preventDefault() },
      field('Namespace', namespaces),
      field('Action', actions),
      field(
        'Who',
        h('input', {
          id: 'audit-actor',
          autocomplete: 'off',
          oninput: (event) => ((filters.actor = event.target.value), draw()),
        }),
      ),
      field(
        'Target or reason contains',
        h('input', {
          id: 'audit-text',
          type: 'search',
          oninput: (event) => ((filters.text = event.target.value), draw()),
        }),
      ),
      h('button', { type: 'button', onclick: () => void load() }, 'Refresh'),
    ),
    problem,
    h('div', { class: 'table-wrap' }, table.element),
    count,
  );
  void load();
  return undefined;
}
