// A line diff of two JSON documents (keys sorted, so only real changes show), for the policy
// conflict view.

import { h } from './dom.js';

/** JSON with sorted keys, two-space indents. */
export function canonicalJson(value) {
  const sort = (node) =>
    Array.isArray(node)
      ? node.map(sort)
      : node && typeof node === 'object'
        ? Object.fromEntries(
            Object.keys(node)
              .sort()
              .map((key) => [key, sort(node[key])]),
          )
        : node;
  return JSON.stringify(sort(value), null, 2);
}

/** `[{ kind: 'same' | 'removed' | 'added', line }]`: from `before` to `after`, by longest common subsequence. */
export function diffLines(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ kind: 'same', line: a[i++] });
      j++;
    } else if (i < a.length && (j >= b.length || common[i + 1][j] >= common[i][j + 1])) {
      lines.push({ kind: 'removed', line: a[i++] });
    } else {
      lines.push({ kind: 'added', line: b[j++] });
    }
  }
  return lines;
}

/** The diff as a block: `-` lines were only in `before`, `+` lines only in `after`. */
export function diffView(before, after, { beforeLabel, afterLabel }) {
  const marks = { same: ' ', removed: '-', added: '+' };
  return h(
    'figure',
    { class: 'diff' },
    h(
      'figcaption',
      {},
      h('span', { class: 'removed' }, `− ${beforeLabel}`),
      ' ',
      h('span', { class: 'added' }, `+ ${afterLabel}`),
    ),
    h(
      'pre',
      {},
      diffLines(canonicalJson(before), canonicalJson(after)).map(({ kind, line }) =>
        h('span', { class: `line ${kind}` }, `${marks[kind]} ${line}\n`),
      ),
    ),
  );
}
