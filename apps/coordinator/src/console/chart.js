// A small line chart of what the page has seen: budget use and failure rate (both 0–100 %),
// over the last minutes, as inline SVG.

import { h, svg } from './dom.js';
import { clock, percent } from './format.js';

const WIDTH = 640;
const HEIGHT = 160;
const PAD = { left: 40, right: 10, top: 10, bottom: 22 };
const SERIES = [
  { key: 'budgetUse', label: 'budget use', className: 'series-budget' },
  { key: 'failureRate', label: 'failure rate', className: 'series-failures' },
];

const MIN_SPAN_MS = 60 * 1000;
const MAX_SPAN_MS = 5 * 60 * 1000;

/** The span grows with what the page has seen: from one minute up to five. */
export function historyChart(samples) {
  const now = Date.now();
  const spanMs = Math.min(MAX_SPAN_MS, Math.max(MIN_SPAN_MS, now - (samples[0]?.at ?? now)));
  const from = now - spanMs;
  const shown = samples.filter((sample) => sample.at >= from);
  const x = (at) => PAD.left + ((at - from) / spanMs) * (WIDTH - PAD.left - PAD.right);
  const y = (ratio) => PAD.top + (1 - Math.min(1, Math.max(0, ratio))) * (HEIGHT - PAD.top - PAD.bottom);
  const last = shown[shown.length - 1];
  const summary = last
    ? `Over the last ${Math.round(spanMs / 1000)} s (${shown.length} readings): budget use now ${percent(last.budgetUse)}, failure rate now ${percent(last.failureRate)}.`
    : 'No readings yet.';
  const grid = [0, 0.5, 1].map((ratio) => [
    svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(ratio), y2: y(ratio), class: 'grid' }),
    svg('text', { x: PAD.left - 6, y: y(ratio) + 4, 'text-anchor': 'end' }, `${ratio * 100}%`),
  ]);
  const ticks = [from, from + spanMs / 2, now].map((at, index) =>
    svg('text', { x: x(at), y: HEIGHT - 6, 'text-anchor': ['start', 'middle', 'end'][index] }, clock(at)),
  );
  const lines = SERIES.map((series) =>
    svg('polyline', {
      class: series.className,
      points: shown.map((sample) => `${x(sample.at).toFixed(1)},${y(sample[series.key]).toFixed(1)}`).join(' '),
    }),
  );
  return h(
    'figure',
    { class: 'chart' },
    svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': summary }, grid, ticks, lines),
    h(
      'figcaption',
      {},
      SERIES.map((series) => h('span', { class: `legend ${series.className}` }, series.label)),
      h('span', { class: 'muted' }, ` ${summary} From what this page has seen since it opened.`),
    ),
  );
}
