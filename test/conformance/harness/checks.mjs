// A scenario's expectations, checked against what the run produced: the driver's events, the
// dependency's requests, the coordinators' traffic and the fleet's state after the run. Each check
// answers null (it holds) or a short message saying what was expected and what came.

const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A value matches an expectation: a literal (equal), or `{min, max}`, `{oneOf: [...]}`,
 * `{contains: "text"}`, `{present: true|false}`.
 */
export function matches(value, expected) {
  if (expected === null || typeof expected !== 'object' || Array.isArray(expected)) {
    return JSON.stringify(value) === JSON.stringify(expected);
  }
  if ('present' in expected) return (value !== undefined && value !== null) === expected.present;
  if ('oneOf' in expected) return expected.oneOf.some((option) => matches(value, option));
  if ('contains' in expected) return typeof value === 'string' && value.includes(expected.contains);
  if (typeof value !== 'number') return false;
  return (expected.min === undefined || value >= expected.min) && (expected.max === undefined || value <= expected.max);
}

const show = (value) => (value === undefined ? 'nothing' : JSON.stringify(value));

/** The retry asks of the namespace's traffic: one per ask, with the proxy it came through (`via`) and its request. */
export function asksOf(run) {
  const asks = [];
  for (const entry of decisionRequests(run)) {
    if (entry.path.endsWith('/retries')) {
      for (const ask of entry.body?.asks ?? []) asks.push({ ...ask, via: entry.proxy, entry });
    } else {
      asks.push({ ...(entry.body ?? {}), dep: entry.path.split('/')[4], via: entry.proxy, entry });
    }
  }
  return asks;
}

/** The requests carrying retry asks. */
export function decisionRequests(run) {
  return run.traffic.filter((entry) => isAsk(entry, run.namespace));
}

export function isAsk(entry, namespace) {
  return (
    entry.method === 'POST' &&
    (entry.path === `/v1/${namespace}/retries` ||
      (entry.path.startsWith(`/v1/${namespace}/deps/`) && entry.path.endsWith('/retry')))
  );
}

/** An admission: `POST …/deps/{dep}/admit`. */
export function isAdmit(entry, namespace) {
  return entry.method === 'POST' && entry.path.startsWith(`/v1/${namespace}/deps/`) && entry.path.endsWith('/admit');
}

const KINDS = {
  retry: (e) => e.method === 'POST' && e.path.endsWith('/retry'),
  retries: (e) => e.method === 'POST' && e.path.endsWith('/retries'),
  decisions: (e) => e.method === 'POST' && (e.path.endsWith('/retry') || e.path.endsWith('/retries')),
  reports: (e) => e.method === 'POST' && e.path.endsWith('/reports'),
  admit: (e) => e.method === 'POST' && e.path.endsWith('/admit'),
  events: (e) => e.method === 'GET' && e.path.endsWith('/events'),
  views: (e) => e.method === 'GET' && /\/deps\/[^/]+$/.test(e.path),
  all: () => true,
};

/** The time of the driver event a check's `after` names: `{call: "c1"}`, `{event: "mode", mode: "fleet"}`. */
function eventTime(run, after) {
  const event = run.events.find((e) =>
    after.call !== undefined
      ? e.event === 'call' && e.id === after.call
      : Object.entries(after).every(([k, v]) => e[k] === v),
  );
  return event?.receivedAt;
}

function since(run, check, entries) {
  if (!check.after) return { entries };
  const at = eventTime(run, check.after);
  if (at === undefined) return { error: `no driver event ${JSON.stringify(check.after)} to count from` };
  return { entries: entries.filter((entry) => entry.at > at) };
}

const CHECKS = {
  call(check, run) {
    const event = run.events.find((e) => e.event === 'call' && e.id === check.call);
    if (!event) return `call ${check.call}: no result`;
    for (const [field, expected] of Object.entries(check)) {
      if (field === 'call') continue;
      if (field === 'endsWithin') {
        const failure = endsWithin(run, event, check.call, expected);
        if (failure) return failure;
        continue;
      }
      if (!matches(event[field], expected)) {
        return `call ${check.call}: ${field} ${show(event[field])}, expected ${show(expected)}`;
      }
    }
    return null;
  },

  dependency(check, run) {
    const all = run.dependency.filter((r) => check.dependency === '*' || r.path === check.dependency);
    const where = `dependency ${check.dependency}`;
    if ('count' in check && !matches(all.length, check.count)) {
      return `${where}: ${all.length} requests, expected ${show(check.count)}`;
    }
    if ('header' in check) {
      const indexes = check.request === undefined ? all.map((_, i) => i) : [check.request];
      for (const i of indexes) {
        const request = all[i];
        if (!request) return `${where}: no request #${i + 1}`;
        const value = request.headers[check.header.toLowerCase()];
        if (!matches(value, check.value)) {
          return `${where} request #${i + 1}: ${check.header} ${show(value)}, expected ${show(check.value)}`;
        }
      }
    }
    if (check.deadlineShrinks) {
      const values = all.map((r) => r.headers['sluice-deadline-ms']);
      if (values.length < 2) return `${where}: ${values.length} requests, expected at least 2 to compare deadlines`;
      if (values.some((v) => !/^\d+$/.test(v ?? '')))
        return `${where}: sluice-deadline-ms ${show(values)}, expected integers`;
      const numbers = values.map(Number);
      if (check.max !== undefined && numbers[0] > check.max)
        return `${where}: sluice-deadline-ms ${numbers[0]} > ${check.max}`;
      for (let i = 1; i < numbers.length; i++) {
        if (numbers[i] >= numbers[i - 1])
          return `${where}: sluice-deadline-ms ${show(numbers)}, expected each below the one before`;
      }
    }
    if (check.gapMs) {
      const { from = 0, to = 1, min, max } = check.gapMs;
      if (!all[from] || !all[to]) return `${where}: ${all.length} requests, expected #${from + 1} and #${to + 1}`;
      const gap = all[to].at - all[from].at;
      if (!matches(gap, { min, max }))
        return `${where}: ${gap} ms between requests #${from + 1} and #${to + 1}, expected ${show({ min, max })}`;
    }
    return null;
  },

  asks(check, run) {
    const found = since(
      run,
      check,
      asksOf(run).map((ask) => ({ ...ask, at: ask.entry.at })),
    );
    if (found.error) return found.error;
    const asks = found.entries.filter((ask) => check.dep === undefined || ask.dep === check.dep);
    const after = check.after ? ` after ${JSON.stringify(check.after)}` : '';
    return matches(asks.length, check.asks) ? null : `${asks.length} retry asks${after}, expected ${show(check.asks)}`;
  },

  requests(check, run) {
    const kind = KINDS[check.requests];
    if (!kind) return `unknown request kind ${check.requests}`;
    const found = since(run, check, run.traffic.filter(kind));
    if (found.error) return found.error;
    const after = check.after ? ` after ${JSON.stringify(check.after)}` : '';
    const n = found.entries.length;
    return matches(n, check.count) ? null : `${n} ${check.requests} requests${after}, expected ${show(check.count)}`;
  },

  ask(check, run) {
    const ask = asksOf(run)[check.ask - 1];
    if (!ask) return `no retry ask #${check.ask}`;
    for (const [field, expected] of Object.entries(check.fields ?? {})) {
      if (!matches(ask[field], expected))
        return `retry ask #${check.ask}: ${field} ${show(ask[field])}, expected ${show(expected)}`;
    }
    if (check.sinceDependency) {
      // When the ask went out, from the nth request (1-based) the dependency got on a path.
      const { dependency, request = 1, min, max } = check.sinceDependency;
      const answered = run.dependency.filter((r) => r.path === dependency)[request - 1];
      if (!answered)
        return `retry ask #${check.ask}: no request #${request} of dependency ${dependency} to time it from`;
      const ms = ask.entry.at - answered.at;
      if (!matches(ms, { min, max }))
        return `retry ask #${check.ask}: ${ms} ms after request #${request} of ${dependency}, expected ${show({ min, max })}`;
    }
    if (check.viaOtherThan !== undefined) {
      const other = asksOf(run)[check.viaOtherThan - 1];
      if (!other || other.via === ask.via) {
        return `retry ask #${check.ask} went to the same coordinator as ask #${check.viaOtherThan} (${show(ask.via)})`;
      }
    }
    return null;
  },

  askIds(check, run) {
    const asks = asksOf(run);
    const missing = asks.find((ask) => typeof ask.requestId !== 'string' || !ID_PATTERN.test(ask.requestId));
    if (missing) return `a retry ask without a valid requestId: ${show(missing.requestId)}`;
    if (check.askIds === 'present') return null;
    const faulted = decisionRequests(run).filter((entry) => entry.fault !== null);
    if (check.askIds === 'unique') {
      const reSent = new Set(faulted.flatMap((entry) => idsOf(entry)));
      const seen = new Set();
      for (const ask of asks) {
        if (seen.has(ask.requestId) && !reSent.has(ask.requestId))
          return `requestId ${ask.requestId} sent for two asks`;
        seen.add(ask.requestId);
      }
      return null;
    }
    // 'reasked': every ask the proxy failed or lost was asked again with the same requestId.
    if (faulted.length === 0) return 'no retry ask was failed by the proxy';
    for (const entry of faulted) {
      const later = decisionRequests(run).filter((other) => other.at >= entry.at && other !== entry);
      for (const id of idsOf(entry)) {
        if (!later.some((other) => idsOf(other).includes(id))) {
          return `the ask with requestId ${id} got ${entry.fault} and was not asked again with that id (asked next: ${show(later.flatMap(idsOf))})`;
        }
      }
    }
    return null;
  },

  budget(check, run) {
    for (const [field, expected] of Object.entries(check.budget)) {
      if (!matches(run.budget?.[field], expected))
        return `budget ${field} ${show(run.budget?.[field])}, expected ${show(expected)}`;
    }
    return null;
  },

  /** The client's breaker at its last `wait_breaker` step. */
  breaker(check, run) {
    const event = run.events.findLast((e) => e.event === 'breaker');
    if (!event) return 'no breaker event';
    if (event.timedOut || event.state !== check.breaker) {
      return `the client's breaker ${event.state}${event.timedOut ? ' (timed out)' : ''}, expected ${check.breaker}`;
    }
    return null;
  },

  mode(check, run) {
    const event = run.events.find((e) => e.event === 'mode' && (e.mode === check.mode || e.timedOut));
    if (!event || event.timedOut || event.mode !== check.mode) {
      return `the client's mode ${event ? `${event.mode}${event.timedOut ? ' (timed out)' : ''}` : 'never said'}, expected ${check.mode}`;
    }
    return null;
  },

  report(check, run) {
    const entries = run.traffic
      .filter(KINDS.reports)
      .flatMap((entry) => entry.body?.deps ?? [])
      .filter((dep) => dep.dep === run.dependencyName);
    const sum = entries.reduce((total, dep) => total + (Number(dep[check.report]) || 0), 0);
    return matches(sum, check.sum) ? null : `reports' ${check.report} add up to ${sum}, expected ${show(check.sum)}`;
  },
};

/**
 * `endsWithin: {"ms": 280, "of": "admit"}`: the call's result came at most `ms` after the first
 * request of that kind reached a proxy (the driver's event, as the harness received it).
 */
function endsWithin(run, event, call, { ms, of }) {
  if (!KINDS[of]) return `call ${call}: endsWithin counts from an unknown kind of request, ${show(of)}`;
  const first = run.traffic.find((entry) => KINDS[of](entry) && entry.path.startsWith(`/v1/${run.namespace}/`));
  if (!first) return `call ${call}: no ${of} request to count from`;
  const took = event.receivedAt - first.at;
  return took <= ms ? null : `call ${call}: ended ${took} ms after its first ${of} request, expected at most ${ms}`;
}

function idsOf(entry) {
  if (entry.path.endsWith('/retries')) return (entry.body?.asks ?? []).map((ask) => ask.requestId);
  return [entry.body?.requestId];
}

/** The first failed check's message, or null when every check holds. */
export function firstFailure(checks, run) {
  for (const check of checks) {
    const kind = Object.keys(CHECKS).find((name) => name in check);
    if (!kind) return `unknown check ${JSON.stringify(check)}`;
    const failure = CHECKS[kind](check, run);
    if (failure) return failure;
  }
  return null;
}
