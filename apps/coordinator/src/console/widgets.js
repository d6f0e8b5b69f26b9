// Pieces several pages share: state badges, notices, the confirmation dialog, sortable tables.

import { h } from './dom.js';
import { STATE_LABELS } from './format.js';

export function stateBadge(state) {
  return h('span', { class: `badge state-${state ?? 'unknown'}` }, STATE_LABELS[state] ?? state ?? 'unknown');
}

/** A message in the page: `kind` is `error`, `ok` or `info`; errors are announced at once. */
export function notice(kind, ...content) {
  return h('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...content);
}

/**
 * Asks the operator, in a modal dialog (Escape or Cancel says no). `choices` are
 * `[{ label, value, primary? }]`; resolves the chosen value, or null.
 */
export function ask({ title, body, choices }) {
  return new Promise((resolve) => {
    const titleId = `dialog-title-${Math.random().toString(36).slice(2)}`;
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId });
    const close = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      close(null);
    });
    dialog.append(
      h('h2', { id: titleId }, title),
      h('div', { class: 'dialog-body' }, body),
      h(
        'div',
        { class: 'dialog-actions' },
        h('button', { type: 'button', onclick: () => close(null) }, 'Cancel'),
        choices.map((choice) =>
          h(
            'button',
            {
              type: 'button',
              class: choice.primary ? 'primary' : choice.danger ? 'danger' : '',
              onclick: () => close(choice.value),
            },
            choice.label,
          ),
        ),
      ),
    );
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A yes/no question: resolves true only when the operator confirms. */
export async function confirmAction(title, body, label) {
  return (await ask({ title, body, choices: [{ label, value: true, danger: true }] })) === true;
}

/**
 * A table whose columns sort on click (and Enter/Space: the headers are buttons).
 * `columns`: `[{ key, label, value(row), cell(row), numeric? }]`. Returns `{ element, update(rows) }`.
 */
export function sortableTable({ caption, columns, rowKey, sort = { key: columns[0].key, ascending: true } }) {
  const body = h('tbody');
  const headers = columns.map((column) => {
    const button = h('button', { type: 'button', class: 'sort', onclick: () => sortBy(column.key) }, column.label);
    return { column, th: h('th', { scope: 'col', class: column.numeric ? 'numeric' : '' }, button) };
  });
  let rows = [];
  const draw = () => {
    const column = columns.find((candidate) => candidate.key === sort.key) ?? columns[0];
    const sorted = [...rows].sort((a, b) => {
      const x = column.value(a);
      const y = column.value(b);
      const order =
        x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
      return sort.ascending ? order : -order;
    });
    for (const { column: headerColumn, th } of headers) {
      th.setAttribute(
        'aria-sort',
        headerColumn.key === sort.key ? (sort.ascending ? 'ascending' : 'descending') : 'none',
      );
    }
    body.replaceChildren(
      ...sorted.map((row) =>
        h(
          'tr',
          { 'data-key': rowKey(row) },
          columns.map((entry) =>
            h('td', { class: entry.numeric ? 'numeric' : '', 'data-column': entry.key }, entry.cell(row)),
          ),
        ),
      ),
    );
  };
  const sortBy = (key) => {
    sort = { key, ascending: sort.key === key ? !sort.ascending : true };
    draw();
  };
  const element = h(
    'table',
    { class: 'data' },
    h('caption', {}, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((header) => header.th),
      ),
    ),
    body,
  );
  return {
    element,
    update(next) {
      rows = next;
      draw();
    },
  };
}

/** A labelled form field: `field('Reason', input)`. */
export function field(label, control, hint) {
  const id = control.id || `field-${Math.random().toString(36).slice(2)}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    hint ? h('small', { id: hintId }, hint) : null,
  );
}
