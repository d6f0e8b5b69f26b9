// One dependency: its state in detail, a chart of the last minutes (the coordinator's history of
// those before the page opened, then live), and the operator's actions (trip, force-close,
// reset), each confirmed and shown with the audit entry it made.

import { h, render } from '../dom.js';
import { describeError, path, post } from '../api.js';
import { auditLine, latestEntry } from '../audit-data.js';
import { historyChart } from '../chart.js';
import { breakerCell, budgetCell, limitsCell, modeCell } from '../dependency-cells.js';
import { keepLive, refreshFailed } from '../live.js';
import { readBreakers, readHistory, readView, samplesOf } from '../fleet-data.js';
import { clock, dateTime, millis, parseDuration, percent } from '../format.js';
import { isDegraded } from '../health.js';
import { ask, confirmAction, field, notice } from '../widgets.js';

const ACTIONS = {
  trip: { label: 'Trip (force open)', verb: 'Trip', audit: 'breaker.trip', needsReason: true },
  'force-close': { label: 'Force closed', verb: 'Force closed', audit: 'breaker.force_close', needsReason: true },
  reset: { label: 'Reset', verb: 'Reset', audit: 'breaker.reset', needsReason: false },
};

export function dependencyPage(container, params) {
  const [namespace, dependency] = params;
  if (!namespace || !dependency) {
    render(container, notice('error', 'No dependency given: open one from the Fleet page.'));
    return undefined;
  }
  let stopped = false;
  let view;
  let breaker;
  let listed = null;
  const openedAt = Date.now();
  /** The coordinator's history of the minutes before the page opened; null until read (or when it cannot be). */
  let history = null;
  const summary = h('div', { class: 'summary', 'aria-live': 'off' });
  const chart = h('div');
  const problem = h('div');
  const outcome = h('div', { 'aria-live': 'polite' });
  const streamLine = h('p');

  const draw = () => {
    summary.classList.toggle('stale', isDegraded());
    if (!view) return;
    const shown = { ...view.breaker, ...(breaker ?? {}) };
    render(
      summary,
      h(
        'dl',
        { class: 'facts' },
        fact('Breaker', breakerCell(shown)),
        fact('Since', shown.since ? dateTime(shown.since) : '—'),
        fact('Failure rate', `${percent(view.breaker.failureRate)} of ${view.breaker.calls} calls`),
        fact('Slow calls', percent(view.breaker.slowRate)),
        fact(
          'Retry budget',
          budgetCell(view.budget),
          `${view.budget.mode ?? 'fixed'}, window ${view.budget.windowSeconds} s, ${view.budget.requests} requests`,
        ),
        fact(
          'Latency p50 / p95 / p99',
          [view.latency.p50, view.latency.p95, view.latency.p99].map(millis).join(' / '),
          `${view.latency.count} calls measured`,
        ),
        fact('Reporters', view.reporters ?? '—'),
        fact('Rate / concurrency', limitsCell(view)),
        fact('Mode', modeCell(view.policy)),
        fact(
          'Breaker policy',
          `opens at ${percent(view.policy.breaker.failureRateThreshold)} failures over ${view.policy.breaker.minimumCalls}+ calls, open ${millis(view.policy.breaker.openMs)}`,
        ),
      ),
      h('p', { class: 'status' }, `Refreshed ${clock(Date.now())}`),
    );
    render(
      chart,
      historyChart({
        history: history ?? [],
        samples: samplesOf(namespace, dependency),
        breaker: shown,
        openedAt,
        historyRead: history !== null,
      }),
    );
  };

  const refresh = async () => {
    try {
      view = await readView(namespace, dependency);
      if (stopped) return;
      if (breaker && (view.breaker.since ?? 0) >= (breaker.since ?? 0)) breaker = undefined;
      render(problem);
    } catch (error) {
      if (!stopped) render(problem, refreshFailed(error));
    }
    draw();
  };

  readHistory(namespace, dependency).then(
    (points) => {
      history = points;
      if (!stopped) draw();
    },
    () => undefined,
  );

  readBreakers(namespace).then(
    (items) => (listed = items.some((item) => item.dependency === dependency)),
    () => (listed = null),
  );

  const reason = h('input', { name: 'reason', maxlength: 512, autocomplete: 'off' });
  const duration = h('input', {
    name: 'duration',
    inputmode: 'text',
    autocomplete: 'off',
    placeholder: 'until reset',
    size: 10,
  });
  const reasonField = field('Reason', reason, 'Required to trip or force closed; kept in the audit log.');
  const durationField = field('Duration', duration, 'Optional: 90s, 10m, 1h. Empty: until reset.');
  const fieldError = (input, message) => {
    input.setAttribute('aria-invalid', message ? 'true' : 'false');
    const holder = input.parentElement;
    holder.querySelector('.field-error')?.remove();
    if (message) holder.append(h('span', { class: 'field-error', role: 'alert' }, message));
  };

  const act = async (name) => {
    const action = ACTIONS[name];
    const text = reason.value.trim();
    const seconds = name === 'reset' ? null : parseDuration(duration.value);
    fieldError(reason, action.needsReason && !text ? 'A reason is required.' : '');
    fieldError(
      duration,
      Number.isNaN(seconds) || seconds === 0 ? 'Write a duration like 90s, 10m or 1h, or leave it empty.' : '',
    );
    if ((action.needsReason && !text) || Number.isNaN(seconds) || seconds === 0) return;
    const lasting = seconds ? ` for ${millis(seconds * 1000)}` : name === 'reset' ? '' : ' until reset';
    const confirmed = await confirmAction(
      `${action.verb} ${dependency}?`,
      [
        h('p', {}, `${action.verb} ${namespace}/${dependency} for the whole fleet${lasting}.`),
        text ? h('p', {}, `Reason: “${text}”`) : null,
        listed === false && name !== 'reset'
          ? h('p', { class: 'warning' }, `${dependency} is not among ${namespace}’s dependencies: check the name.`)
          : null,
      ],
      action.verb,
    );
    if (!confirmed) return;
    const body =
      name === 'reset'
        ? text
          ? { reason: text }
          : {}
        : { reason: text, ...(seconds ? { durationSeconds: seconds } : {}) };
    try {
      const result = await post(path('admin', 'v1', namespace, 'breakers', dependency, name), body);
      breaker = {
        state: result.state,
        since: result.since,
        openUntil: result.openUntil,
        reason: result.reason ?? null,
      };
      draw();
      await showOutcome(action, result);
      if (name === 'trip' && result.known === false) await confirmUnknown();
    } catch (error) {
      render(outcome, notice('error', `${action.verb} failed: ${describeError(error)}`));
    }
  };

  const showOutcome = async (action, result) => {
    const entry = await latestEntry(namespace, action.audit, dependency).catch(() => undefined);
    render(
      outcome,
      notice(
        'ok',
        h('p', {}, `${action.verb}: ${namespace}/${dependency} is now ${result.state.replace('_', ' ')}.`),
        entry ? auditLine(entry) : h('span', {}, 'The audit entry could not be read.'),
      ),
    );
  };

  // The trip has happened; the coordinator says no caller ever used this name: keep it, or undo it.
  const confirmUnknown = async () => {
    const choice = await ask({
      title: `${dependency} is unknown`,
      body: h(
        'p',
        {},
        `No caller has reported or asked for ${namespace}/${dependency} recently: the name may be a typo. It is forced open now. Keep it that way?`,
      ),
      choices: [
        { label: 'Undo: reset it', value: 'undo', danger: true },
        { label: 'Keep it tripped', value: 'keep', primary: true },
      ],
    });
    if (choice === 'keep' || choice === null) return;
    try {
      const result = await post(path('admin', 'v1', namespace, 'breakers', dependency, 'reset'), {
        reason: 'undo: unknown dependency',
      });
      breaker = { state: result.state, since: result.since, openUntil: result.openUntil, reason: null };
      draw();
      await showOutcome(ACTIONS.reset, result);
    } catch (error) {
      render(outcome, notice('error', `Reset failed: ${describeError(error)}`));
    }
  };

  render(
    container,
    h('p', {}, h('a', { href: `#/fleet/${encodeURIComponent(namespace)}` }, `← Fleet · ${namespace}`)),
    h('h1', {}, `${namespace} / ${dependency}`),
    streamLine,
    problem,
    summary,
    h(
      'div',
      { class: 'dependency-grid' },
      h('section', { 'aria-labelledby': 'chart-title' }, h('h2', { id: 'chart-title' }, 'Last minutes'), chart),
      h(
        'section',
        { class: 'actions', 'aria-labelledby': 'actions-title' },
        h('h2', { id: 'actions-title' }, 'Operator actions'),
        h(
          'form',
          { onsubmit: (event) => event.preventDefault() },
          h('div', { class: 'row' }, reasonField, durationField),
          h(
            'div',
            { class: 'row' },
            Object.entries(ACTIONS).map(([name, action]) =>
              h(
                'button',
                {
                  type: 'button',
                  class: name === 'reset' ? '' : 'danger',
                  'data-action': name,
                  onclick: () => void act(name),
                },
                action.label,
              ),
            ),
          ),
        ),
        outcome,
      ),
    ),
    h(
      'p',
      {},
      h(
        'a',
        { href: `#/policies/${encodeURIComponent(namespace)}/deps/${encodeURIComponent(dependency)}` },
        'Edit this dependency’s policy',
      ),
    ),
  );
  const live = keepLive({
    namespace,
    refresh,
    draw,
    onBreaker: (reading) => {
      if (reading.dependency !== dependency) return;
      breaker = reading;
      draw();
    },
  });
  render(streamLine, live.stream);
  return () => {
    stopped = true;
    live.stop();
  };
}

function fact(term, value, detail) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value, detail ? h('small', {}, ` ${detail}`) : null));
}
