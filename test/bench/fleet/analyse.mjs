// The figures of one run, the table of all runs, and the checks of what the simulation must show.
import { REPORT_INTERVAL_MS, reportMergeIntervalMs } from '../support.mjs';
import {
  BIN_MS,
  RECOVERED_FOR_MS,
  RECOVERED_GOODPUT,
  isSluice,
  phaseBounds,
  runPolicy,
  scenarioMs,
} from './scenario.mjs';

/**
 * The fleet budget counts a first attempt when a report of it is written (in the coordinator's
 * second of that moment): up to a report interval and a merge interval after it went out. So its
 * 10 s window can hold the first attempts of up to 10.3 s; a per-process budget counts each at once.
 */
const fleetDepositLagBins = () => Math.ceil((REPORT_INTERVAL_MS + reportMergeIntervalMs()) / BIN_MS);

/** Amplification Sluice must stay under during the full outage: 1 + ratio + this. */
export const TOLERANCE = 0.05;

const sum = (values, from = 0, to = values.length) => {
  let total = 0;
  for (let i = Math.max(0, from); i < Math.min(to, values.length); i++) total += values[i];
  return total;
};

/** Element-wise sum of the callers' series. */
function fleetSeries(callers, name) {
  const out = new Array(callers[0].calls[name].length).fill(0);
  for (const caller of callers) caller.calls[name].forEach((value, i) => (out[i] += value));
  return out;
}

/**
 * Recovery: ms from the dependency's recovery until the fleet's success rate is back above 99%,
 * over 500 ms windows of calls (by scheduled start) sliding by one bin, and staying there to the
 * end of the scenario. null when it never comes back.
 */
function recoveryMs(ok, offered, fromBin, toBin) {
  const width = 5;
  let candidate = null;
  for (let bin = fromBin; bin + width <= toBin; bin++) {
    const calls = sum(offered, bin, bin + width);
    const rate = calls === 0 ? 1 : sum(ok, bin, bin + width) / calls;
    if (rate >= 0.99) candidate ??= bin;
    else candidate = null;
  }
  return candidate === null ? null : (candidate - fromBin) * BIN_MS;
}

/**
 * The most retries a budget of `floor` retries/s can grant within [fromBin, toBin). Split the span
 * into blocks of one budget window W: every grant of a block lies in the window (t − W, t] of the
 * block's last grant t, so a block grants at most max over t in the block of
 * ratio × first attempts in (t − W − lag, t] + floor × W, where `lagBins` is how late a first
 * attempt may be counted. First attempts are what the dependency received as attempt 1 (probes
 * included) and, for a window reaching before the start, the warm-up calls.
 */
function budgetCeiling(dependency, retryBudget, floor, fromBin, toBin, lagBins) {
  const windowBins = (retryBudget.windowSeconds * 1000) / BIN_MS;
  const deposits = (from, to) =>
    sum(dependency.first, from, to) + sum(dependency.probes, from, to) + (from < 0 ? dependency.beforeStart : 0);
  let ceiling = 0;
  for (let block = fromBin; block < toBin; block += windowBins) {
    let most = 0;
    for (let t = block + 1; t <= Math.min(block + windowBins, toBin); t++)
      most = Math.max(most, deposits(t - windowBins - lagBins, t));
    ceiling += retryBudget.ratio * most + floor * retryBudget.windowSeconds;
  }
  return Math.floor(ceiling);
}

/** The median of `values` (Infinity counts as a value above all others), or null for none. */
function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[Math.floor(middle)];
}

/**
 * ms from `fromMs` until a breaker whose transitions are `[at, state]` pairs is closed: 0 when it
 * is closed at `fromMs` (or never opened), Infinity when it does not close.
 */
function closedAfterMs(transitions, fromMs) {
  let state = 'closed';
  for (const [at, to] of transitions) {
    if (at === null) continue;
    if (at <= fromMs) state = to;
    else if (state === 'closed') return 0;
    else if (to === 'closed') return at - fromMs;
  }
  return state === 'closed' ? 0 : Infinity;
}

/** Every figure of one run (one strategy, one fleet size, one scenario). */
export function figures(run) {
  return run.scenario === 'metastable' ? metastableFigures(run) : outageFigures(run);
}

/**
 * The metastable scenario's figures: goodput (calls that succeeded ÷ calls offered, by scheduled
 * start) per second, and the time from the trigger's end until goodput over 1 s windows is at
 * least RECOVERED_GOODPUT for RECOVERED_FOR_MS (null: never within the scenario).
 */
function metastableFigures(run) {
  const { phases, callers, dependency, coordinator, strategy } = run;
  const bounds = phaseBounds(phases);
  const endBin = scenarioMs(phases) / BIN_MS;
  const [, triggerEndBin] = bounds.trigger.map((ms) => ms / BIN_MS);
  const offered = fleetSeries(callers, 'offered');
  const ok = fleetSeries(callers, 'ok');
  const windowBins = 1000 / BIN_MS;
  const goodput = (bin) => {
    const calls = sum(offered, bin, bin + windowBins);
    return calls === 0 ? 1 : sum(ok, bin, bin + windowBins) / calls;
  };
  const sustainBins = RECOVERED_FOR_MS / BIN_MS;
  let recoveredBin = null;
  for (let bin = triggerEndBin; bin + sustainBins <= endBin && recoveredBin === null; bin++) {
    let held = true;
    for (let b = bin; b + windowBins <= bin + sustainBins && held; b++) held = goodput(b) >= RECOVERED_GOODPUT;
    if (held) recoveredBin = bin;
  }
  const afterFrom = triggerEndBin;
  const offeredTotal = sum(offered);
  return {
    scenario: 'metastable',
    strategy,
    n: callers.length,
    offered: { total: offeredTotal, after: sum(offered, afterFrom, endBin) },
    goodputPerSecond: Array.from({ length: Math.floor(endBin / windowBins) }, (_, s) => goodput(s * windowBins)),
    recoveryMs: recoveredBin === null ? null : (recoveredBin - triggerEndBin) * BIN_MS,
    // After the trigger: what the dependency received for each call offered, and how much of the
    // work it did was for callers that had already given up.
    amplificationAfter: sum(dependency.received, afterFrom, endBin) / sum(offered, afterFrom, endBin),
    wastedShareAfter:
      sum(dependency.wasted, afterFrom, endBin) / Math.max(1, sum(dependency.served, afterFrom, endBin)),
    peakQueue: Math.max(...dependency.queued),
    queueAtEnd: dependency.queued[endBin - 1],
    coordinatorRequests: coordinator ? coordinator.total : null,
    coordinatorPerCall: coordinator ? coordinator.total / offeredTotal : null,
    callerLoopDelayP99Ms: Math.max(...callers.map((caller) => caller.loopDelayP99Ms)),
  };
}

/** The outage scenario's figures. */
function outageFigures(run) {
  const { phases, callers, dependency, coordinator, strategy, policy } = run;
  const n = callers.length;
  const bounds = phaseBounds(phases);
  const bin = ([from, to]) => [from / BIN_MS, to / BIN_MS];
  const [outageFrom, outageTo] = bin(bounds.outage);
  const [brownFrom, brownTo] = bin(bounds.brownout);
  const [recoveryFrom] = bin(bounds.recovery);
  const endBin = scenarioMs(phases) / BIN_MS;
  const offered = fleetSeries(callers, 'offered');
  const ok = fleetSeries(callers, 'ok');
  const rejected = fleetSeries(callers, 'rejected');
  const binsPerSecond = 1000 / BIN_MS;

  // One fleet breaker (sluice): its half-open periods are the transitions the coordinator pushed.
  // Per-process breakers: each has its own periods, and the fleet's cycle is their mean.
  const periods = callers.map((caller) => caller.seen.halfOpenPeriods);
  const halfOpenPeriods = run.fleetBreaker
    ? run.fleetBreaker.filter(([at, state]) => at >= 0 && state === 'half_open').length
    : periods.reduce((a, b) => a + b, 0) / periods.length;
  // Probes the dependency received; for sluice, the coordinator's (fleet) apart from those the
  // SDK's local fallback breaker let out while the coordinator did not answer in time.
  const fallbackProbes = sum(dependency.fallbackProbes);
  const probes = sum(dependency.probes) - fallbackProbes;
  const offeredTotal = sum(offered);
  const retriesOutage = sum(dependency.retries, outageFrom, outageTo);
  const { retryBudget } = policy;
  // The fleet budget's ceiling over the outage, and the one of N per-process budgets (N floors).
  const fleetCeiling = budgetCeiling(
    dependency,
    retryBudget,
    retryBudget.minRetriesPerSecond,
    outageFrom,
    outageTo,
    fleetDepositLagBins(),
  );
  const perProcessCeiling = budgetCeiling(
    dependency,
    retryBudget,
    n * retryBudget.minRetriesPerSecond,
    outageFrom,
    outageTo,
    0,
  );

  // When the breakers closed after the outage: the fleet's as the coordinator pushed it; each
  // per-process breaker's, and their median (a breaker that does not close counts as last).
  const outageEnd = bounds.outage[1];
  const perProcessClose = callers.map((caller) => closedAfterMs(caller.seen.transitions, outageEnd));
  const closeAfterOutage = run.fleetBreaker ? closedAfterMs(run.fleetBreaker, outageEnd) : median(perProcessClose);

  return {
    scenario: 'outage',
    strategy,
    n,
    closeAfterOutageMs: Number.isFinite(closeAfterOutage) ? closeAfterOutage : null,
    perProcessCloseMs: run.fleetBreaker ? null : perProcessClose.map((ms) => (Number.isFinite(ms) ? ms : null)),
    maxProbesInFlight: dependency.maxProbesInFlight,
    offered: {
      total: offeredTotal,
      outage: sum(offered, outageFrom, outageTo),
      brownout: sum(offered, brownFrom, brownTo),
    },
    received: {
      total: sum(dependency.received),
      outage: sum(dependency.received, outageFrom, outageTo),
      brownout: sum(dependency.received, brownFrom, brownTo),
    },
    amplificationOutage: sum(dependency.received, outageFrom, outageTo) / sum(offered, outageFrom, outageTo),
    amplificationBrownout: sum(dependency.received, brownFrom, brownTo) / sum(offered, brownFrom, brownTo),
    retriesOutage,
    retriesPerSecondOutage: retriesOutage / phases.outage,
    // Retries granted during the outage by the coordinator and by the SDK's local fallback (SDK strategies).
    grantsOutage: {
      fleet: sum(fleetSeries(callers, 'fleetGrants'), outageFrom, outageTo),
      local: sum(fleetSeries(callers, 'localGrants'), outageFrom, outageTo),
    },
    budgetCeilingOutage: { fleet: fleetCeiling, perProcess: perProcessCeiling },
    probes,
    fallbackProbes,
    probesSentByCallers: callers.reduce((total, caller) => total + caller.seen.probesSent, 0),
    halfOpenPeriods,
    probesPerPeriod: halfOpenPeriods > 0 ? probes / halfOpenPeriods : null,
    recoveryMs: recoveryMs(ok, offered, recoveryFrom, endBin),
    successOutage: sum(ok, outageFrom, outageTo) / sum(offered, outageFrom, outageTo),
    successBrownout: sum(ok, brownFrom, brownTo) / sum(offered, brownFrom, brownTo),
    // Per second of the brown-out: what the budget's window still held from the outage shows first.
    successPerSecondBrownout: Array.from({ length: Math.round((brownTo - brownFrom) / binsPerSecond) }, (_, i) => {
      const from = brownFrom + i * binsPerSecond;
      return sum(ok, from, from + binsPerSecond) / sum(offered, from, from + binsPerSecond);
    }),
    rejectedOutage: sum(rejected, outageFrom, outageTo) / sum(offered, outageFrom, outageTo),
    coordinatorRequests: coordinator ? coordinator.total : null,
    coordinatorPerCall: coordinator ? coordinator.total / offeredTotal : null,
    coordinatorDecisions: coordinator ? coordinator.decisions : null,
    fallbackSwitches: isSluice(strategy)
      ? callers.reduce((total, caller) => total + caller.seen.fallbackSwitches, 0)
      : null,
    retryDecisionsOver50ms: coordinator ? coordinator.retryDecisionsOver50ms : null,
    // Calls that ended because their retry decision was not answered within decisionTimeoutMs.
    lateDecisions: isSluice(strategy)
      ? callers.reduce((total, caller) => total + (caller.seen.giveUps.coordinator_unavailable ?? 0), 0)
      : null,
    callerLoopDelayP99Ms: Math.max(...callers.map((caller) => caller.loopDelayP99Ms)),
  };
}

const fixed = (value, digits) => (value === null || value === undefined ? '—' : value.toFixed(digits));
const percent = (value) => (value === null ? '—' : `${(value * 100).toFixed(1)} %`);

const seconds = (ms) => (ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`);

/** A Markdown table: the first two columns left-aligned, the rest right-aligned. */
function markdown(header, lines) {
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i].length)));
  const format = (cells) =>
    `| ${cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i < 2 ? `${'-'.repeat(width + 2)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [format(header), rule, ...lines.map(format)].join('\n');
}

/** The table of one part, in Markdown, one row per run. */
export function table(part, rows) {
  if (part.scenario === 'metastable') {
    return markdown(
      [
        'strategy',
        'N',
        'recovery after the trigger',
        'goodput per second (%)',
        'amplification after',
        'wasted work after',
        'peak queue (at end)',
        'coordinator req. per call',
      ],
      rows.map((f) => [
        f.strategy,
        String(f.n),
        seconds(f.recoveryMs),
        f.goodputPerSecond.map((g) => Math.round(g * 100)).join(' '),
        `${fixed(f.amplificationAfter, 2)}×`,
        percent(f.wastedShareAfter),
        `${f.peakQueue} (${f.queueAtEnd})`,
        fixed(f.coordinatorPerCall, 3),
      ]),
    );
  }
  return markdown(
    [
      'strategy',
      'N',
      'amplification, outage',
      'amplification, brown-out',
      'retries/s, outage',
      'probe calls (half-open periods)',
      'probes in flight, most',
      'closed after the outage',
      'recovery to 99 %',
      'success, brown-out',
      'coordinator req. per call',
    ],
    rows.map((f) => [
      f.strategy,
      String(f.n),
      `${fixed(f.amplificationOutage, 2)}×`,
      `${fixed(f.amplificationBrownout, 2)}×`,
      fixed(f.retriesPerSecondOutage, 0),
      (f.halfOpenPeriods === 0
        ? String(f.probes)
        : `${f.probes} (${fixed(f.halfOpenPeriods, isSluice(f.strategy) ? 0 : 1)})`) +
        (f.fallbackProbes > 0 ? ` + ${f.fallbackProbes} fallback` : ''),
      String(f.maxProbesInFlight),
      seconds(f.closeAfterOutageMs),
      seconds(f.recoveryMs),
      percent(f.successBrownout),
      fixed(f.coordinatorPerCall, 3),
    ]),
  );
}

/**
 * The one table of a run: per strategy and N, what each part showed. The close is the fleet
 * breaker's for sluice, the median process's for the per-process strategies.
 */
export function summary(runs) {
  const keys = [];
  for (const run of runs)
    if (!keys.some(([s, n]) => s === run.strategy && n === run.n)) keys.push([run.strategy, run.n]);
  keys.sort((a, b) => a[1] - b[1]);
  const lines = keys.map(([strategy, n]) => {
    const find = (part) => runs.find((run) => run.part === part && run.strategy === strategy && run.n === n)?.figures;
    const on = find('outage');
    const off = find('outage, breakers off');
    const metastable = find('metastable');
    const mine = runs.filter((run) => run.strategy === strategy && run.n === n);
    const requests = mine.reduce((total, run) => total + (run.figures.coordinatorRequests ?? 0), 0);
    const calls = mine.reduce((total, run) => total + run.figures.offered.total, 0);
    return [
      strategy,
      String(n),
      on ? percent(on.successBrownout) : '—',
      off ? percent(off.successBrownout) : '—',
      on ? `${fixed(on.amplificationOutage, 2)}×` : '—',
      off ? `${fixed(off.amplificationOutage, 2)}×` : '—',
      on ? seconds(on.closeAfterOutageMs) : '—',
      metastable ? seconds(metastable.recoveryMs) : '—',
      isSluice(strategy) ? fixed(requests / calls, 3) : '—',
    ];
  });
  return markdown(
    [
      'strategy',
      'N',
      'brown-out success, breakers on',
      'brown-out success, breakers off',
      'outage amplification, breakers on',
      'outage amplification, breakers off',
      'breaker closed after the outage',
      'metastable: recovery after the trigger',
      'coordinator req. per call',
    ],
    lines,
  );
}

/** What the table leaves out: the budgets' ceilings, who granted the retries, what the coordinators served. */
export function notes(runs) {
  const lines = [];
  for (const run of runs) {
    const f = run.figures;
    if (f.scenario === 'metastable') continue;
    if (f.strategy === 'local-budget') {
      lines.push(
        `local-budget N=${f.n}: ${f.retriesOutage} retries during the outage; ceiling of ${f.n} per-process budgets ` +
          `${f.budgetCeilingOutage.perProcess} (the fleet budget's: ${f.budgetCeilingOutage.fleet}).`,
      );
    }
    if (!isSluice(f.strategy)) continue;
    const routes = Object.entries(run.coordinator.byRoute)
      .map(([route, count]) => `${route} ${count}`)
      .join(', ');
    lines.push(
      `${f.strategy} N=${f.n}: ${f.retriesOutage} retries during the outage, ${f.grantsOutage.fleet} granted by the coordinator ` +
        `(fleet budget ceiling ${f.budgetCeilingOutage.fleet}) and ${f.grantsOutage.local} by the SDK's local fallback; ` +
        `${f.fallbackSwitches} switches to the fallback (${summariseCauses(run.callers)})` +
        (f.fallbackProbes > 0 ? `, during which its local breaker let ${f.fallbackProbes} probe calls out` : '') +
        `; ${f.retryDecisionsOver50ms} retry decisions took a coordinator over 50 ms, and ${f.lateDecisions} calls ` +
        'ended coordinator_unavailable (a decision not answered within decisionTimeoutMs). ' +
        `Coordinator requests: ${f.coordinatorRequests} for ${f.offered.total} calls (${routes}).`,
    );
  }
  return lines;
}

function summariseCauses(callers) {
  const causes = {};
  for (const caller of callers) {
    for (const [cause, count] of Object.entries(caller.seen.fallbackCauses)) {
      const short = cause.replace(/: \{.*\}$/, '');
      causes[short] = (causes[short] ?? 0) + count;
    }
  }
  const list = Object.entries(causes).sort((a, b) => b[1] - a[1]);
  return list.length === 0 ? 'none' : list.map(([cause, count]) => `${count}× ${cause}`).join('; ');
}

/** The properties the simulation exists to show, each with what was measured (`shown`: a figure, not a check). */
export function checks(part, rows, brownoutRate) {
  const results = part.scenario === 'metastable' ? metastableChecks(rows) : outageChecks(part, rows, brownoutRate);
  // A caller whose event loop stalls sends its calls late and in bursts: the run measured the machine.
  const stalled = rows.filter((f) => f.callerLoopDelayP99Ms > CALLER_STALL_MS);
  results.push({
    ok: stalled.length === 0,
    text:
      `${part.name}: every caller kept to its schedule (event loop delay p99 ≤ ${CALLER_STALL_MS} ms)` +
      (stalled.length > 0
        ? `; not ${stalled.map((f) => `${f.strategy} N=${f.n} (${f.callerLoopDelayP99Ms} ms)`).join(', ')}: too little CPU for the callers`
        : ''),
  });
  return results;
}

/** The most a caller's event loop may lag (p99) for its run to count: beyond it, its CPU share was too small. */
const CALLER_STALL_MS = 500;

const byN = (rows, strategy) => rows.filter((f) => f.strategy === strategy).sort((a, b) => a.n - b.n);

function metastableChecks(rows) {
  const results = [];
  for (const f of byN(rows, 'naive')) {
    results.push({
      ok: f.recoveryMs === null,
      text: `metastable, naive N=${f.n}: stuck, goodput never back at ${RECOVERED_GOODPUT * 100} % for ${RECOVERED_FOR_MS / 1000} s after the trigger (${seconds(f.recoveryMs)})`,
    });
  }
  for (const f of byN(rows, 'sluice-adaptive')) {
    results.push({
      ok: f.recoveryMs !== null && f.recoveryMs <= 5000,
      text: `metastable, sluice-adaptive N=${f.n}: goodput back at ${RECOVERED_GOODPUT * 100} % within 5 s of the trigger's end (${seconds(f.recoveryMs)})`,
    });
  }
  for (const f of rows.filter((row) => !['naive', 'sluice-adaptive'].includes(row.strategy))) {
    results.push({
      ok: true,
      shown: true,
      text: `metastable, ${f.strategy} N=${f.n}: recovered after ${seconds(f.recoveryMs)}`,
    });
  }
  return results;
}

/**
 * The brown-out success an adaptive budget allows at most once its window holds only brown-out
 * traffic: it grants while the retries that failed stay under `ratio × rate + floors`, each retry
 * fails as often as a first attempt (`failRate`), and a call may retry `maxAttempts − 1` times.
 * With `floors` per-process budgets, each adds its own floor.
 * @example adaptiveBrownoutCeiling({ ratio: 0.1, minRetriesPerSecond: 2, maxAttempts: 3 }, 400, 0.3, 1) // 0.945
 */
export function adaptiveBrownoutCeiling(budget, rate, failRate, floors) {
  const failingRetriesPerSecond = budget.ratio * rate + budget.minRetriesPerSecond * floors;
  let wanted = 0;
  for (let k = 1; k < budget.maxAttempts; k++) wanted += rate * failRate ** k;
  const granted = Math.min(wanted, failingRetriesPerSecond / failRate);
  return (rate * (1 - failRate) + granted * (1 - failRate)) / rate;
}

function outageChecks(part, rows, brownoutRate) {
  const results = [];
  const policy = runPolicy(part, 'sluice-adaptive');
  const bound = 1 + policy.retryBudget.ratio + TOLERANCE;
  const { breakers } = part;
  const label = breakers ? 'breakers on' : 'breakers off';
  const local = byN(rows, 'local-budget');

  for (const strategy of ['sluice-fixed', 'sluice-adaptive']) {
    const sluice = byN(rows, strategy);
    for (const f of sluice) {
      const name = `${label}, ${strategy} N=${f.n}`;
      results.push({
        ok: f.amplificationOutage <= bound,
        text: `${name}: outage amplification ${f.amplificationOutage.toFixed(3)} ≤ 1 + ratio + ${TOLERANCE} = ${bound.toFixed(2)}`,
      });
      results.push({
        ok: f.grantsOutage.fleet <= f.budgetCeilingOutage.fleet,
        text: `${name}: ${f.grantsOutage.fleet} retries granted by the coordinator during the outage ≤ the fleet budget's ceiling ${f.budgetCeilingOutage.fleet}`,
      });
      results.push({
        ok: f.retriesOutage <= f.budgetCeilingOutage.fleet,
        text:
          `${name}: ${f.retriesOutage} retries received during the outage ≤ the fleet budget's ceiling ${f.budgetCeilingOutage.fleet}` +
          (f.grantsOutage.local > 0 ? ` (${f.grantsOutage.local} granted by the SDK's local fallback)` : ''),
      });
      if (breakers) {
        results.push({
          ok: f.halfOpenPeriods > 0 && f.probes === f.halfOpenPeriods * policy.breaker.halfOpenProbes,
          text:
            `${name}: ${f.probes} probe calls admitted by the coordinator in ${f.halfOpenPeriods} half-open periods (halfOpenProbes ${policy.breaker.halfOpenProbes} each)` +
            (f.fallbackProbes > 0 ? `; ${f.fallbackProbes} more from the SDK's local fallback breaker` : ''),
        });
        results.push({
          ok: f.maxProbesInFlight <= policy.breaker.halfOpenProbes,
          text: `${name}: at most ${f.maxProbesInFlight} probes in flight at once fleet-wide ≤ halfOpenProbes ${policy.breaker.halfOpenProbes}`,
        });
        const medians = ['cockatiel', 'local-budget']
          .map((other) => rows.find((row) => row.strategy === other && row.n === f.n))
          .filter(Boolean);
        if (medians.length > 0) {
          const latest = Math.min(...medians.map((row) => row.closeAfterOutageMs ?? Infinity));
          results.push({
            ok: f.closeAfterOutageMs !== null && f.closeAfterOutageMs <= latest,
            text:
              `${name}: the fleet's breaker closed ${seconds(f.closeAfterOutageMs)} after the outage, no later than the per-process breakers' median close ` +
              `(${medians.map((row) => `${row.strategy} ${seconds(row.closeAfterOutageMs)}`).join(', ')})`,
          });
        }
      }
    }
    if (sluice.length > 1) {
      // With the breakers off, the outage's amplification is the budget's doing and must not move with
      // N. With them on, most of it is the first attempts sent before the breaker opened, which
      // follows how fast reports reach a loaded coordinator: that spread is shown, not checked.
      const amplifications = sluice.map((f) => f.amplificationOutage);
      const spread = Math.max(...amplifications) - Math.min(...amplifications);
      const list = sluice.map((f) => `N=${f.n}: ${f.amplificationOutage.toFixed(3)}`).join(', ');
      results.push({
        ok: breakers || spread <= TOLERANCE,
        shown: breakers,
        text: breakers
          ? `${label}, ${strategy}: outage amplification ${list} (spread ${spread.toFixed(3)}; not checked with the breakers on)`
          : `${label}, ${strategy}: outage amplification independent of N (${list}; spread ${spread.toFixed(3)} ≤ ${TOLERANCE})`,
      });
    }
  }
  // What adaptive budgets are for: in the brown-out, succeed at least as often as every other
  // budgeted strategy (cockatiel's counts where it keeps within the same outage bound), with the
  // breakers off at 95 % or more; with them on, no more load in the outage than the best
  // per-process breaker.
  for (const f of byN(rows, 'sluice-adaptive')) {
    const peers = rows.filter(
      (row) =>
        row.n === f.n &&
        (row.strategy === 'local-budget' ||
          row.strategy === 'sluice-fixed' ||
          (row.strategy === 'cockatiel' && (breakers || row.amplificationOutage <= bound))),
    );
    const best = Math.max(...peers.map((row) => row.successBrownout));
    const floor = breakers ? best : Math.max(best, 0.95);
    results.push({
      ok: f.successBrownout + 1e-9 >= floor,
      text:
        `${label}, sluice-adaptive N=${f.n}: brown-out success ${percent(f.successBrownout)} ≥ ${breakers ? '' : '95 % and '}every other budgeted strategy's ` +
        `(${peers.map((row) => `${row.strategy} ${percent(row.successBrownout)}`).join(', ')})`,
    });
    if (!breakers && brownoutRate !== undefined) {
      const rate = f.offered.brownout / part.phases.brownout;
      const fleet = adaptiveBrownoutCeiling(policy.retryBudget, rate, brownoutRate, 1);
      const perProcess = adaptiveBrownoutCeiling(policy.retryBudget, rate, brownoutRate, f.n);
      results.push({
        ok: true,
        shown: true,
        text:
          `${label}, sluice-adaptive N=${f.n}: the most an adaptive budget of ratio ${policy.retryBudget.ratio} lets succeed in a steady ` +
          `${percent(brownoutRate)} brown-out at ${rate.toFixed(0)} calls/s: ${percent(fleet)} for one fleet budget, ${percent(perProcess)} for ${f.n} ` +
          `per-process ones (their ${f.n} floors); brown-out success per second ${f.successPerSecondBrownout.map((s) => percent(s)).join(' ')}`,
      });
    }
    if (breakers) {
      const perProcess = rows.filter((row) => row.n === f.n && ['cockatiel', 'local-budget'].includes(row.strategy));
      if (perProcess.length > 0) {
        const lowest = Math.min(...perProcess.map((row) => row.amplificationOutage));
        results.push({
          ok: f.amplificationOutage <= lowest + 1e-9,
          text:
            `${label}, sluice-adaptive N=${f.n}: outage amplification ${f.amplificationOutage.toFixed(3)}× ≤ the best per-process breaker's ` +
            `(${perProcess.map((row) => `${row.strategy} ${row.amplificationOutage.toFixed(3)}×`).join(', ')})`,
        });
      }
    }
  }
  for (const f of byN(rows, 'naive')) {
    results.push({
      ok: f.amplificationOutage > 3.8,
      text: `${label}, naive N=${f.n}: outage amplification ${f.amplificationOutage.toFixed(2)} ≈ 4×`,
    });
  }
  if (local.length > 1) {
    const growing = local.every((f, i) => i === 0 || f.retriesPerSecondOutage > local[i - 1].retriesPerSecondOutage);
    results.push({
      ok: growing,
      text: `${label}, local-budget: outage retries/s grow with N at the same offered load (${local.map((f) => `N=${f.n}: ${f.retriesPerSecondOutage.toFixed(0)}/s`).join(', ')})`,
    });
  }
  if (breakers) {
    for (const f of [...byN(rows, 'cockatiel'), ...local]) {
      if (f.probesPerPeriod === null) continue;
      results.push({
        ok: f.probesPerPeriod >= 0.5 * f.n,
        text: `${label}, ${f.strategy} N=${f.n}: ${f.probesPerPeriod.toFixed(1)} probe calls per half-open period (about one per process)`,
      });
    }
  }
  return results;
}
