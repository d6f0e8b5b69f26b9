// The dependency chart, as inline SVG: budget use and failure rate (both 0–100 %) over up to the
// last 15 minutes, with the breaker's state as a band beneath and a mark where the page opened.
// The minutes before come from the coordinator's history (chart-data.js).

import { chartData } from './chart-data.js';
import { h, svg } from './dom.js';
import { STATE_LABELS, clock, percent } from './format.js';

const WIDTH = 640;
const HEIGHT = 196;
const PAD = { left: 58, right: 10, top: 10, bottom: 46 };
const PLOT_BOTTOM = HEIGHT - PAD.bottom;
const BAND = { top: PLOT_BOTTOM + 6, height: 10 };
const SERIES = [
  { key: 'budgetUse', label: 'budget use', className: 'series-budget' },
  { key: 'failureRate', label: 'failure rate', className: 'series-failures' },
];

/**
 * @param {{ history: any[], samples: any[], breaker?: { state: string, since: number | null },
 *   openedAt: number, historyRead: boolean }} input
 *   `historyRead`: whether the coordinator's history could be read (else only what the page saw).
 */
export function historyChart({ history, samples, breaker, openedAt, historyRead }) {
  const now = Date.now();
  const { from, spanMs, readings, lines: runs, states } = chartData({ history, samples, breaker, now });
  const x = (at) => PAD.left + ((at - from) / spanMs) * (WIDTH - PAD.left - PAD.right);
  const y = (ratio) => PAD.top + (1 - Math.min(1, Math.max(0, ratio))) * (PLOT_BOTTOM - PAD.top);
  const last = readings[readings.length - 1];
  const before = readings.filter((reading) => !reading.live);
  const minutes = Math.round(spanMs / 60_000);
  const summary = last
    ? `Over the last ${minutes} min: budget use now ${percent(last.budgetUse)}, failure rate now ${percent(last.failureRate)}, breaker ${STATE_LABELS[breaker?.state ?? last.state] ?? last.state}.`
    : 'No readings yet.';
  const grid = [0, 0.5, 1].map((ratio) => [
    svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(ratio), y2: y(ratio), class: 'grid' }),
    svg('text', { x: PAD.left - 6, y: y(ratio) + 4, 'text-anchor': 'end' }, `${ratio * 100}%`),
  ]);
  const ticks = [0, 1, 2, 3].map((i) =>
    svg(
      'text',
      { x: x(from + (spanMs * i) / 3), y: HEIGHT - 6, 'text-anchor': ['start', 'middle', 'middle', 'end'][i] },
      clock(from + (spanMs * i) / 3),
    ),
  );
  const band = [
    svg('text', { x: PAD.left - 6, y: BAND.top + BAND.height - 1, 'text-anchor': 'end' }, 'breaker'),
    states.map((span) =>
      svg(
        'rect',
        {
          class: `band state-${span.state}`,
          x: x(span.from).toFixed(1),
          y: BAND.top,
          width: Math.max(1, x(span.to) - x(span.from)).toFixed(1),
          height: BAND.height,
        },
        svg('title', {}, `${STATE_LABELS[span.state] ?? span.state} from ${clock(span.from)}`),
      ),
    ),
  ];
  const lines = SERIES.map((series) =>
    runs[series.key].map((segment) =>
      segment.length === 1
        ? svg('circle', {
            class: `dot ${series.className}`,
            cx: x(segment[0].at).toFixed(1),
            cy: y(segment[0][series.key]).toFixed(1),
            r: 2.5,
          })
        : svg('polyline', {
            class: series.className,
            points: segment.map((r) => `${x(r.at).toFixed(1)},${y(r[series.key]).toFixed(1)}`).join(' '),
          }),
    ),
  );
  const opened =
    openedAt > from
      ? [
          svg('line', { class: 'opened', x1: x(openedAt), x2: x(openedAt), y1: PAD.top, y2: PLOT_BOTTOM }),
          svg(
            'text',
            { class: 'opened-label', x: x(openedAt) - 4, y: PAD.top + 10, 'text-anchor': 'end' },
            'page opened',
          ),
        ]
      : [];
  const source = historyRead
    ? `${before.length > 0 ? `From the coordinator’s history (a point per 10 s with reports) until ${clock(openedAt)}, then` : 'Since'} what this page has read every 2 s.`
    : 'The coordinator’s history could not be read: only what this page has read since it opened.';
  return h(
    'figure',
    { class: 'chart' },
    svg(
      'svg',
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': summary },
      grid,
      ticks,
      band,
      lines,
      opened,
    ),
    h(
      'figcaption',
      {},
      SERIES.map((series) => h('span', { class: `legend ${series.className}` }, series.label)),
      h('span', { class: 'legend-band' }, 'breaker state below'),
      h('span', { class: 'muted' }, ` ${summary} ${source}`),
    ),
  );
}
