// GET /admin/v1/namespaces, and the namespace field the pages share.

import { get, path } from './api.js';
import { h } from './dom.js';

/** `[{ namespace, dependencies }]`, every namespace the token covers that holds state or policies. */
export async function listNamespaces() {
  return (await get(path('admin', 'v1', 'namespaces'))).items;
}

/** A labelled namespace field offering the known namespaces (another name may be typed); `onChange(ns)`. */
export function namespaceField(namespaces, selected, onChange) {
  const input = h('input', {
    id: 'namespace',
    list: 'namespace-list',
    value: selected ?? '',
    autocomplete: 'off',
    spellcheck: 'false',
    onchange: (event) => event.target.value.trim() && onChange(event.target.value.trim()),
  });
  return h(
    'div',
    { class: 'field inline' },
    h('label', { for: 'namespace' }, 'Namespace'),
    input,
    h(
      'datalist',
      { id: 'namespace-list' },
      namespaces.map((item) => h('option', { value: item.namespace })),
    ),
  );
}
