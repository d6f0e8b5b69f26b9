// Policies: a namespace's default, or a dependency's, limit's or queue's document: the one stored
// and the one in effect (opened without a document: the first dependency's); edited as JSON with
// the API's errors shown field by field, and a 412 conflict shown as the newer version with a
// diff against the edit.

import { h, render } from '../dom.js';
import { ApiError, describeError, get, path, request } from '../api.js';
import { auditLine, latestEntry } from '../audit-data.js';
import { canonicalJson, diffView } from '../diff.js';
import { readBreakers } from '../fleet-data.js';
import { listNamespaces, namespaceField } from '../namespaces.js';
import { field, notice } from '../widgets.js';

const KINDS = {
  default: { label: 'Namespace default' },
  deps: { label: 'Dependency' },
  limits: { label: 'Named limit' },
  queues: { label: 'Queue' },
};

export function policiesPage(container, params, { navigate }) {
  const [namespace, chosenKind, chosenName = ''] = params;
  const target = h('div');
  const form = h('form', { class: 'row', onsubmit: (event) => event.preventDefault() });
  render(container, h('h1', {}, 'Policies'), form, target);
  listNamespaces()
    .catch(() => [])
    .then(async (namespaces) => {
      const ns = namespace ?? namespaces[0]?.namespace ?? '';
      const dependencies = ns ? await readBreakers(ns).then(namesOf, () => []) : [];
      // Opened without a document: the first dependency's, whose policy in effect says the most.
      const opening = chosenKind === undefined && dependencies.length > 0;
      const kind = opening ? 'deps' : (chosenKind ?? 'default');
      const name = opening ? dependencies[0] : chosenName;
      const kindSelect = h(
        'select',
        { id: 'policy-kind' },
        Object.entries(KINDS).map(([value, entry]) => h('option', { value, selected: value === kind }, entry.label)),
      );
      const nameInput = h('input', {
        id: 'policy-name',
        value: name,
        list: 'policy-dependencies',
        spellcheck: 'false',
        autocomplete: 'off',
      });
      const open = () => {
        const chosenNs = form.querySelector('#namespace').value.trim();
        if (!chosenNs) return;
        if (kindSelect.value === 'default') navigate('policies', chosenNs, 'default');
        else if (nameInput.value.trim()) navigate('policies', chosenNs, kindSelect.value, nameInput.value.trim());
      };
      render(
        form,
        namespaceField(namespaces, ns, () => {}),
        field('Document', kindSelect),
        field('Name', nameInput, 'dependency, limit or queue'),
        h(
          'datalist',
          { id: 'policy-dependencies' },
          dependencies.map((dependency) => h('option', { value: dependency })),
        ),
        h('button', { type: 'submit', onclick: open }, 'Open'),
      );
      if (ns && (kind === 'default' || name)) showDocument(target, { namespace: ns, kind, name }, dependencies);
      else if (!ns) render(target, notice('info', 'No namespace holds state or policies yet: type one above.'));
    });
  return undefined;
}

/** The names of a namespace's dependencies, sorted. */
const namesOf = (items) => items.map((item) => item.dependency).sort();

/**
 * What "In effect" says for a document that is not a dependency's: the namespace default is in
 * effect only through each dependency, so it links to them.
 */
function effectPrompt(ref, dependencies) {
  if (ref.kind !== 'default') {
    return h(
      'p',
      { class: 'muted' },
      'The stored document over the defaults (fields left out take the default; see docs/api.md).',
    );
  }
  return h(
    'div',
    { class: 'effect-prompt' },
    h(
      'p',
      {},
      'The namespace default applies to every dependency without a document of its own, over the built-in ' +
        'defaults and the policies file. What is in effect is each dependency’s:',
    ),
    dependencies.length === 0
      ? h('p', { class: 'muted' }, `${ref.namespace} has no dependencies yet: open one by name (Document: Dependency).`)
      : h(
          'ul',
          {},
          dependencies.map((dependency) =>
            h(
              'li',
              {},
              h(
                'a',
                {
                  href: `#/policies/${encodeURIComponent(ref.namespace)}/deps/${encodeURIComponent(dependency)}`,
                },
                dependency,
              ),
            ),
          ),
        ),
  );
}

function documentPath({ namespace, kind, name }) {
  return kind === 'default'
    ? path('admin', 'v1', namespace, 'policies', 'default')
    : path('admin', 'v1', namespace, 'policies', kind, name);
}

/** The stored document and its version (from the ETag); `{ document: null, version: null }` when none is stored. */
async function readStored(ref) {
  try {
    const answer = await request('GET', documentPath(ref));
    return { document: answer.body, version: /^(?:W\/)?"(\d+)"$/.exec(answer.headers.get('etag') ?? '')?.[1] ?? null };
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return { document: null, version: null };
    throw error;
  }
}

async function showDocument(container, ref, dependencies) {
  const title =
    ref.kind === 'default'
      ? `${ref.namespace} · namespace default`
      : `${ref.namespace} · ${KINDS[ref.kind].label.toLowerCase()} ${ref.name}`;
  const stored = h('pre', { class: 'document', tabindex: '0' });
  const effective = h('div', {}, h('p', { class: 'muted' }, 'Reading…'));
  const editor = h('textarea', { rows: 10, cols: 60, spellcheck: 'false', class: 'code' });
  const reason = h('input', { maxlength: 512, autocomplete: 'off' });
  const outcome = h('div', { 'aria-live': 'polite' });
  const storedTitle = h('h3', {}, 'Stored document');
  /** @type {{ document: unknown, version: string | null }} */
  let base = { document: null, version: null };

  const load = async () => {
    base = await readStored(ref);
    render(
      storedTitle,
      base.version ? `Stored document (version ${base.version})` : 'Stored document (none: defaults apply)',
    );
    render(stored, base.document ? canonicalJson(base.document) : '—');
    editor.value = canonicalJson(base.document ?? {});
    if (ref.kind === 'deps') {
      const view = await get(path('v1', ref.namespace, 'deps', ref.name));
      render(effective, h('pre', { class: 'document', tabindex: '0' }, canonicalJson(view.policy)));
    } else {
      render(effective, effectPrompt(ref, dependencies));
    }
  };

  const save = async () => {
    let document;
    try {
      document = JSON.parse(editor.value);
    } catch (error) {
      render(outcome, notice('error', `The document is not JSON: ${/** @type {Error} */ (error).message}`));
      return;
    }
    const query = reason.value.trim() ? `?${new URLSearchParams({ reason: reason.value.trim() })}` : '';
    /** @type {Record<string, string>} */
    const precondition = base.version ? { 'if-match': `"${base.version}"` } : { 'if-none-match': '*' };
    try {
      const answer = await request('PUT', `${documentPath(ref)}${query}`, { body: document, headers: precondition });
      const version = /"(\d+)"/.exec(answer.headers.get('etag') ?? '')?.[1];
      const entry = await latestEntry(ref.namespace, 'policy.put', auditTarget(ref)).catch(() => undefined);
      await load();
      render(outcome, notice('ok', h('p', {}, `Saved: version ${version}.`), entry ? auditLine(entry) : null));
    } catch (error) {
      if (error instanceof ApiError && error.status === 412) await showConflict(document, error);
      else if (error instanceof ApiError && error.status === 400) showInvalid(error);
      else render(outcome, notice('error', `Saving failed: ${describeError(error)}`));
    }
  };

  const showInvalid = (error) =>
    render(
      outcome,
      notice(
        'error',
        h('p', {}, 'The coordinator refused the document (400): nothing was saved.'),
        h(
          'ul',
          { class: 'field-errors' },
          (error.details.length ? error.details : [{ field: 'document', message: error.message }]).map((detail) =>
            h('li', {}, h('code', {}, detail.field || 'document'), `: ${detail.message}`),
          ),
        ),
      ),
    );

  const showConflict = async (mine, error) => {
    const newer = await readStored(ref);
    render(
      outcome,
      notice(
        'error',
        h(
          'p',
          {},
          `Conflict (412 ${error.code}): the document changed while you edited it. You edited version ${base.version ?? 'none'}; `,
          newer.version ? `the stored one is now version ${newer.version}.` : 'it has since been deleted.',
          ' Nothing was saved.',
        ),
        diffView(newer.document ?? {}, mine, {
          beforeLabel: `version ${newer.version ?? 'none'} (stored)`,
          afterLabel: 'your edit',
        }),
        h(
          'div',
          { class: 'row' },
          h(
            'button',
            {
              type: 'button',
              onclick: () =>
                void load().then(() =>
                  render(outcome, notice('info', `Loaded version ${newer.version ?? 'none'}: edit it again.`)),
                ),
            },
            'Load the newer version',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              onclick: () => {
                base = newer;
                render(storedTitle, `Stored document (version ${newer.version ?? 'none'})`);
                render(stored, newer.document ? canonicalJson(newer.document) : '—');
                render(
                  outcome,
                  notice('info', `Your edit is kept; Save now replaces version ${newer.version ?? 'none'}.`),
                );
              },
            },
            'Keep my edit over it',
          ),
        ),
      ),
    );
  };

  render(
    container,
    h('h2', {}, title),
    h(
      'div',
      { class: 'columns' },
      h('section', {}, storedTitle, stored),
      h('section', {}, h('h3', {}, 'In effect'), effective),
    ),
    h(
      'form',
      { class: 'editor', onsubmit: (event) => (event.preventDefault(), void save()) },
      field('Edit the stored document (JSON)', editor, 'Fields left out take the defaults.'),
      field('Reason (for the audit log)', reason),
      h('button', { type: 'submit', class: 'primary' }, 'Save'),
    ),
    outcome,
  );
  try {
    await load();
  } catch (error) {
    render(outcome, notice('error', describeError(error)));
  }
}

/** How the audit log names a policy document: its path under …/policies/ (`default`, `deps/payments-api`, …). */
function auditTarget(ref) {
  return ref.kind === 'default' ? 'default' : `${ref.kind}/${ref.name}`;
}
