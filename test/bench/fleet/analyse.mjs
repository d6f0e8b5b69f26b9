// The figures of one run, the table of all runs, and the checks of what the simulation must show.
import { REPORT_INTERVAL_MS, reportMergeIntervalMs } from '../support.mjs';
import { BIN_MS, phaseBounds, scenarioMs } from './scenario.mjs';

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

/** Every figure of one run (one strategy, one fleet size). */
export function figures(run) {
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

  return {
    strategy,
    n,
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
    rejectedOutage: sum(rejected, outageFrom, outageTo) / sum(offered, outageFrom, outageTo),
    coordinatorRequests: coordinator ? coordinator.total : null,
    coordinatorPerCall: coordinator ? coordinator.total / offeredTotal : null,
    coordinatorDecisions: coordinator ? coordinator.decisions : null,
    fallbackSwitches:
      strategy === 'sluice' ? callers.reduce((total, caller) => total + caller.seen.fallbackSwitches, 0) : null,
    retryDecisionsOver50ms: coordinator ? coordinator.retryDecisionsOver50ms : null,
    // Calls that ended because their retry decision was not answered within decisionTimeoutMs.
    lateDecisions:
      strategy === 'sluice'
        ? callers.reduce((total, caller) => total + (caller.seen.giveUps.coordinator_unavailable ?? 0), 0)
        : null,
    callerLoopDelayP99Ms: Math.max(...callers.map((caller) => caller.loopDelayP99Ms)),
  };
}

const fixed = (value, digits) => (value === null || value === undefined ? '—' : value.toFixed(digits));
const percent = (value) => (value === null ? '—' : `${(value * 100).toFixed(1)} %`);

/** The table, in Markdown, one row per run. */
export function table(rows) {
  const header = [
    'strategy',
    'N',
    'amplification, outage',
    'amplification, brown-out',
    'retries/s, outage',
    'probe calls (half-open periods)',
    'probes per period',
    'recovery to 99 %',
    'success, brown-out',
    'coordinator req. per call',
  ];
  const lines = rows.map((f) => [
    f.strategy,
    String(f.n),
    `${fixed(f.amplificationOutage, 2)}×`,
    `${fixed(f.amplificationBrownout, 2)}×`,
    fixed(f.retriesPerSecondOutage, 0),
    (f.halfOpenPeriods === 0
      ? String(f.probes)
      : `${f.probes} (${fixed(f.halfOpenPeriods, f.strategy === 'sluice' ? 0 : 1)})`) +
      (f.fallbackProbes > 0 ? ` + ${f.fallbackProbes} fallback` : ''),
    fixed(f.probesPerPeriod, 1),
    f.recoveryMs === null ? 'never' : `${(f.recoveryMs / 1000).toFixed(1)} s`,
    percent(f.successBrownout),
    fixed(f.coordinatorPerCall, 3),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i].length)));
  const format = (cells) =>
    `| ${cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i < 2 ? `${'-'.repeat(width + 2)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [format(header), rule, ...lines.map(format)].join('\n');
}

/** What the table leaves out: the budgets' ceilings, who granted the retries, what the coordinators served. */
export function notes(runs) {
  const lines = [];
  for (const run of runs) {
    const f = run.figures;
    if (f.strategy === 'local-budget') {
      lines.push(
        `local-budget N=${f.n}: ${f.retriesOutage} retries during the outage; ceiling of ${f.n} per-process budgets ` +
          `${f.budgetCeilingOutage.perProcess} (the fleet budget's: ${f.budgetCeilingOutage.fleet}).`,
      );
    }
    if (f.strategy !== 'sluice') continue;
    const routes = Object.entries(run.coordinator.byRoute)
      .map(([route, count]) => `${route} ${count}`)
      .join(', ');
    lines.push(
      `sluice N=${f.n}: ${f.retriesOutage} retries during the outage, ${f.grantsOutage.fleet} granted by the coordinator ` +
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
export function checks(rows, policy) {
  const results = [];
  const bound = 1 + policy.retryBudget.ratio + TOLERANCE;
  const breakers = policy.breaker.minimumCalls < 1_000_000;
  const of = (strategy) => rows.filter((f) => f.strategy === strategy).sort((a, b) => a.n - b.n);
  const sluice = of('sluice');
  const local = of('local-budget');

  for (const f of sluice) {
    results.push({
      ok: f.amplificationOutage <= bound,
      text: `sluice N=${f.n}: outage amplification ${f.amplificationOutage.toFixed(3)} ≤ 1 + ratio + ${TOLERANCE} = ${bound.toFixed(2)}`,
    });
    results.push({
      ok: f.grantsOutage.fleet <= f.budgetCeilingOutage.fleet,
      text: `sluice N=${f.n}: ${f.grantsOutage.fleet} retries granted by the coordinator during the outage ≤ the fleet budget's ceiling ${f.budgetCeilingOutage.fleet}`,
    });
    results.push({
      ok: f.retriesOutage <= f.budgetCeilingOutage.fleet,
      text:
        `sluice N=${f.n}: ${f.retriesOutage} retries received during the outage ≤ the fleet budget's ceiling ${f.budgetCeilingOutage.fleet}` +
        (f.grantsOutage.local > 0 ? ` (${f.grantsOutage.local} granted by the SDK's local fallback)` : ''),
    });
    if (breakers) {
      results.push({
        ok: f.halfOpenPeriods > 0 && f.probes === f.halfOpenPeriods * policy.breaker.halfOpenProbes,
        text:
          `sluice N=${f.n}: ${f.probes} probe calls admitted by the coordinator in ${f.halfOpenPeriods} half-open periods (halfOpenProbes ${policy.breaker.halfOpenProbes} each)` +
          (f.fallbackProbes > 0 ? `; ${f.fallbackProbes} more from the SDK's local fallback breaker` : ''),
      });
    }
  }
  if (sluice.length > 1) {
    // With the breakers off, the outage's amplification is the budget's doing and must not move with
    // N. With them on, most of it is the first attempts sent before the breaker opened, which
    // follows how fast reports reach a loaded coordinator: that spread is shown, not checked.
    const amplifications = sluice.map((f) => f.amplificationOutage);
    const spread = Math.max(...amplifications) - Math.min(...amplifications);
    const byN = sluice.map((f) => `N=${f.n}: ${f.amplificationOutage.toFixed(3)}`).join(', ');
    results.push({
      ok: breakers || spread <= TOLERANCE,
      shown: breakers,
      text: breakers
        ? `sluice: outage amplification ${byN} (spread ${spread.toFixed(3)}; not checked with the breakers on)`
        : `sluice: outage amplification independent of N (${byN}; spread ${spread.toFixed(3)} ≤ ${TOLERANCE})`,
    });
  }
  for (const f of of('naive')) {
    results.push({
      ok: f.amplificationOutage > 3.8,
      text: `naive N=${f.n}: outage amplification ${f.amplificationOutage.toFixed(2)} ≈ 4×`,
    });
  }
  if (local.length > 1) {
    const growing = local.every((f, i) => i === 0 || f.retriesPerSecondOutage > local[i - 1].retriesPerSecondOutage);
    results.push({
      ok: growing,
      text: `local-budget: outage retries/s grow with N at the same offered load (${local.map((f) => `N=${f.n}: ${f.retriesPerSecondOutage.toFixed(0)}/s`).join(', ')})`,
    });
  }
  if (breakers) {
    for (const f of [...of('cockatiel'), ...local]) {
      if (f.probesPerPeriod === null) continue;
      results.push({
        ok: f.probesPerPeriod >= 0.5 * f.n,
        text: `${f.strategy} N=${f.n}: ${f.probesPerPeriod.toFixed(1)} probe calls per half-open period (about one per process)`,
      });
    }
  }
  return results;
}
