// The chart: requests the dependency received per second over time, one line per strategy, one
// panel per fleet size, with the outage, the brown-out and the recovery marked. Plain SVG.
import { BIN_MS, phaseBounds, scenarioMs } from './scenario.mjs';

const COLORS = { naive: '#d62728', cockatiel: '#ff7f0e', 'local-budget': '#1f77b4', sluice: '#2ca02c' };
const WIDTH = 900;
const PANEL_HEIGHT = 260;
const MARGIN = { left: 64, right: 150, top: 34, bottom: 40 };

const escape = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round step for about `count` ticks up to `max`. */
function tickStep(max, count) {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
}

/**
 * @param runs [{ strategy, n, received: number[] per bin }], in table order
 * @param options { phases, offeredRps: { [n]: rps }, title }
 */
export function renderChart(runs, { phases, offeredRps, title }) {
  const sizes = [...new Set(runs.map((run) => run.n))];
  const lengthMs = scenarioMs(phases);
  const bins = lengthMs / BIN_MS;
  const bounds = phaseBounds(phases);
  const height = sizes.length * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom) + 30;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="15" font-weight="bold">${escape(title)}</text>`,
  );
  sizes.forEach((n, panel) => {
    const top = 30 + panel * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom) + MARGIN.top;
    const panelRuns = runs.filter((run) => run.n === n);
    const rate = (count) => (count * 1000) / BIN_MS;
    const peak = Math.max(offeredRps[n] ?? 0, ...panelRuns.flatMap((run) => run.received.slice(0, bins).map(rate)));
    const step = tickStep(peak, 5);
    const yMax = Math.ceil(peak / step) * step || 1;
    const x = (ms) => MARGIN.left + (ms / lengthMs) * plotWidth;
    const y = (rps) => top + PANEL_HEIGHT - (rps / yMax) * PANEL_HEIGHT;

    out.push(
      `<text x="${MARGIN.left}" y="${top - 10}" font-size="13" font-weight="bold">N = ${n} callers, ${offeredRps[n]} requests/s offered</text>`,
    );
    // Phase shading and markers.
    out.push(
      `<rect x="${x(bounds.outage[0])}" y="${top}" width="${x(bounds.outage[1]) - x(bounds.outage[0])}" height="${PANEL_HEIGHT}" fill="#f3d6d6" opacity="0.5"/>`,
      `<rect x="${x(bounds.brownout[0])}" y="${top}" width="${x(bounds.brownout[1]) - x(bounds.brownout[0])}" height="${PANEL_HEIGHT}" fill="#f3e9cf" opacity="0.6"/>`,
    );
    for (const [ms, label] of [
      [bounds.outage[0], 'outage'],
      [bounds.brownout[0], 'outage ends: brown-out'],
      [bounds.recovery[0], 'recovery'],
    ]) {
      out.push(
        `<line x1="${x(ms)}" y1="${top}" x2="${x(ms)}" y2="${top + PANEL_HEIGHT}" stroke="#555" stroke-dasharray="4 3"/>`,
        `<text x="${x(ms) + 4}" y="${top + 12}" fill="#333">${escape(label)}</text>`,
      );
    }
    // Axes and grid.
    for (let value = 0; value <= yMax; value += step) {
      out.push(
        `<line x1="${MARGIN.left}" y1="${y(value)}" x2="${MARGIN.left + plotWidth}" y2="${y(value)}" stroke="#e5e5e5"/>`,
        `<text x="${MARGIN.left - 6}" y="${y(value) + 4}" text-anchor="end" fill="#333">${value}</text>`,
      );
    }
    for (let second = 0; second * 1000 <= lengthMs; second += 2) {
      out.push(
        `<text x="${x(second * 1000)}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle" fill="#333">${second} s</text>`,
      );
    }
    out.push(
      `<line x1="${MARGIN.left}" y1="${top + PANEL_HEIGHT}" x2="${MARGIN.left + plotWidth}" y2="${top + PANEL_HEIGHT}" stroke="#333"/>`,
      `<line x1="${MARGIN.left}" y1="${top}" x2="${MARGIN.left}" y2="${top + PANEL_HEIGHT}" stroke="#333"/>`,
    );
    if (offeredRps[n]) {
      out.push(
        `<line x1="${MARGIN.left}" y1="${y(offeredRps[n])}" x2="${MARGIN.left + plotWidth}" y2="${y(offeredRps[n])}" stroke="#777" stroke-dasharray="2 4"/>`,
      );
    }
    // One line per strategy.
    panelRuns.forEach((run, i) => {
      const points = run.received
        .slice(0, bins)
        .map((count, bin) => `${x(bin * BIN_MS).toFixed(1)},${y(rate(count)).toFixed(1)}`)
        .join(' ');
      const color = COLORS[run.strategy] ?? '#000';
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="1.6" stroke-linejoin="round" points="${points}"/>`,
        `<line x1="${WIDTH - MARGIN.right + 14}" y1="${top + 14 + i * 20}" x2="${WIDTH - MARGIN.right + 38}" y2="${top + 14 + i * 20}" stroke="${color}" stroke-width="3"/>`,
        `<text x="${WIDTH - MARGIN.right + 44}" y="${top + 18 + i * 20}">${escape(run.strategy)}</text>`,
      );
    });
    out.push(
      `<line x1="${WIDTH - MARGIN.right + 14}" y1="${top + 14 + panelRuns.length * 20}" x2="${WIDTH - MARGIN.right + 38}" y2="${top + 14 + panelRuns.length * 20}" stroke="#777" stroke-dasharray="2 4"/>`,
      `<text x="${WIDTH - MARGIN.right + 44}" y="${top + 18 + panelRuns.length * 20}">offered</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
