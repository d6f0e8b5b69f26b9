// Dead letters: the namespace's queues that hold some, and one queue's, a page at a time: an
// entry's payload and last error, redrive and purge (each confirmed, and shown with the audit
// entry it made).

import { h, render } from '../dom.js';
import { describeError, get, path, request } from '../api.js';
import { auditLine, latestEntry } from '../audit-data.js';
import { canonicalJson } from '../diff.js';
import { dateTime } from '../format.js';
import { listNamespaces, namespaceField } from '../namespaces.js';
import { confirmAction, field, notice } from '../widgets.js';

const PAGE_SIZE = 10;
const QUEUE_PAGE_SIZE = 50;

export function deadLettersPage(container, params, { navigate }) {
  const [namespace, queue = ''] = params;
  const form = h('form', { class: 'row', onsubmit: (event) => event.preventDefault() });
  const queues = h('section', { 'aria-labelledby': 'queues-title' });
  const list = h('div');
  render(container, h('h1', {}, 'Dead letters'), form, queues, list);
  listNamespaces()
    .catch(() => [])
    .then((namespaces) => {
      const ns = namespace ?? namespaces[0]?.namespace ?? '';
      const queueInput = h('input', { id: 'queue', value: queue, spellcheck: 'false', autocomplete: 'off' });
      render(
        form,
        namespaceField(namespaces, ns, (chosen) => navigate('dead-letters', chosen)),
        field('Queue', queueInput),
        h(
          'button',
          {
            type: 'submit',
            onclick: () => {
              const chosen = form.querySelector('#namespace').value.trim();
              if (chosen && queueInput.value.trim()) navigate('dead-letters', chosen, queueInput.value.trim());
            },
          },
          'Show',
        ),
      );
      const reloadQueues = ns ? showQueues(queues, ns, queue) : () => undefined;
      if (ns && queue) showQueue(list, { namespace: ns, queue }, reloadQueues);
    });
  return undefined;
}

/**
 * The namespace's queues that hold dead letters (GET /admin/v1/{ns}/queues), each a link to its
 * entries. Returns a function that reads them again from the first page.
 */
function showQueues(container, namespace, selected) {
  const body = h('div');
  render(container, h('h2', { id: 'queues-title' }, `Queues with dead letters in ${namespace}`), body);
  /** @type {import('@sluice/protocol').QueueItem[]} */
  const items = [];
  const load = async (cursor) => {
    if (!cursor) items.length = 0;
    const query = new URLSearchParams({ limit: String(QUEUE_PAGE_SIZE) });
    if (cursor) query.set('cursor', cursor);
    try {
      /** @type {import('@sluice/protocol').QueueList} */
      const page = await get(`${path('admin', 'v1', namespace, 'queues')}?${query}`);
      items.push(...page.items);
      render(
        body,
        items.length === 0
          ? h('p', {}, `No queue of ${namespace} holds dead letters.`)
          : h(
              'table',
              { class: 'data queues' },
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Queue', 'Dead letters', 'Last parked'].map((label) => h('th', { scope: 'col' }, label)),
                ),
              ),
              h(
                'tbody',
                {},
                items.map((item) =>
                  h(
                    'tr',
                    { 'data-queue': item.queue, class: item.queue === selected ? 'selected' : null },
                    h(
                      'td',
                      {},
                      h(
                        'a',
                        {
                          href: `#/dead-letters/${encodeURIComponent(namespace)}/${encodeURIComponent(item.queue)}`,
                          'aria-current': item.queue === selected ? 'page' : null,
                        },
                        item.queue,
                      ),
                    ),
                    h('td', { class: 'numeric' }, String(item.deadLetters)),
                    h('td', {}, dateTime(item.lastDeadLetteredAt)),
                  ),
                ),
              ),
            ),
        page.next ? h('button', { type: 'button', onclick: () => void load(page.next) }, 'More queues') : null,
        selected ? null : h('p', { class: 'muted' }, 'Open a queue to see its dead letters.'),
      );
    } catch (error) {
      render(body, notice('error', describeError(error)));
    }
  };
  void load(null);
  return () => void load(null);
}

/** One queue's dead letters; `onChanged()` after a redrive or purge. */
function showQueue(container, ref, onChanged) {
  const cursors = [null];
  const table = h('div');
  const detail = h('section', { class: 'detail', 'aria-live': 'polite' });
  const outcome = h('div', { 'aria-live': 'polite' });
  const listPath = path('admin', 'v1', ref.namespace, 'queues', ref.queue, 'dead-letters');

  const load = async () => {
    const cursor = cursors[cursors.length - 1];
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (cursor) query.set('cursor', cursor);
    try {
      const page = await get(`${listPath}?${query}`);
      render(
        table,
        page.items.length === 0
          ? h('p', {}, cursors.length > 1 ? 'No more dead letters.' : `${ref.queue} has no dead letters.`)
          : h(
              'table',
              { class: 'data' },
              h('caption', {}, `Dead letters of ${ref.namespace}/${ref.queue}, page ${cursors.length}`),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Message', 'Attempts', 'Dead-lettered', 'Last error', ''].map((label) =>
                    h('th', { scope: 'col' }, label),
                  ),
                ),
              ),
              h(
                'tbody',
                {},
                page.items.map((entry) =>
                  h(
                    'tr',
                    { 'data-key': entry.id },
                    h('td', {}, h('code', {}, entry.messageId)),
                    h('td', { class: 'numeric' }, String(entry.attempts)),
                    h('td', {}, dateTime(entry.deadLetteredAt)),
                    h('td', { class: 'truncate' }, entry.error ?? '—'),
                    h(
                      'td',
                      {},
                      h(
                        'button',
                        { type: 'button', onclick: () => inspect(entry), 'aria-label': `Inspect ${entry.messageId}` },
                        'Inspect',
                      ),
                    ),
                  ),
                ),
              ),
            ),
        h(
          'div',
          { class: 'row pager' },
          h(
            'button',
            { type: 'button', disabled: cursors.length === 1, onclick: () => (cursors.pop(), void load()) },
            'Previous page',
          ),
          h(
            'button',
            { type: 'button', disabled: !page.next, onclick: () => (cursors.push(page.next), void load()) },
            'Next page',
          ),
        ),
      );
    } catch (error) {
      render(table, notice('error', describeError(error)));
    }
  };

  const act = async (entry, name) => {
    const verb = name === 'redrive' ? 'Redrive' : 'Purge';
    const body =
      name === 'redrive'
        ? `Redrive ${entry.messageId}: it leaves the dead letters and its attempt count restarts; the payload is handed back to be delivered again.`
        : `Purge ${entry.messageId}: it is deleted for good.`;
    if (!(await confirmAction(`${verb} ${entry.messageId}?`, h('p', {}, body), verb))) return;
    const entryPath = path('admin', 'v1', ref.namespace, 'queues', ref.queue, 'dead-letters', entry.id);
    try {
      await request(name === 'redrive' ? 'POST' : 'DELETE', name === 'redrive' ? `${entryPath}/redrive` : entryPath);
      const audit = await latestEntry(ref.namespace, `dead_letter.${name}`, `${ref.queue}/${entry.id}`).catch(
        () => undefined,
      );
      render(detail);
      render(
        outcome,
        notice(
          'ok',
          h('p', {}, `${verb}: ${entry.messageId} is no longer a dead letter.`),
          audit ? auditLine(audit) : null,
        ),
      );
      onChanged();
      await load();
    } catch (error) {
      render(outcome, notice('error', `${verb} failed: ${describeError(error)}`));
    }
  };

  const inspect = (entry) => {
    render(
      detail,
      h('h2', { tabindex: '-1' }, `Message ${entry.messageId}`),
      h(
        'dl',
        { class: 'facts' },
        h('div', {}, h('dt', {}, 'Attempts'), h('dd', {}, String(entry.attempts))),
        h('div', {}, h('dt', {}, 'First attempt'), h('dd', {}, dateTime(entry.firstAttemptAt))),
        h('div', {}, h('dt', {}, 'Dead-lettered'), h('dd', {}, dateTime(entry.deadLetteredAt))),
      ),
      h('h3', {}, 'Last error'),
      h('pre', { class: 'document' }, entry.error ?? '—'),
      h('h3', {}, 'Payload'),
      h('pre', { class: 'document', tabindex: '0' }, entry.payload === null ? 'null' : canonicalJson(entry.payload)),
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'primary', onclick: () => void act(entry, 'redrive') }, 'Redrive'),
        h('button', { type: 'button', class: 'danger', onclick: () => void act(entry, 'purge') }, 'Purge'),
      ),
    );
    detail.querySelector('h2').focus();
  };

  render(container, table, outcome, detail);
  void load();
}
