// The console's pure helpers, run in Node: the event-stream parser, the diff, the duration field.
// The browser files are plain JavaScript without declarations: their shapes, as used here.
const CONSOLE = '../../apps/coordinator/src/console';
let createSseParser: (onEvent: (event: { event: string; data: string }) => void) => (chunk: string) => void;
let diffLines: (before: string, after: string) => Array<{ kind: string; line: string }>;
let parseDuration: (text: string) => number | null;
type Budget = { retries: number; limit: number; retriesSucceeded?: number; cap?: number; mode?: string };
let budgetUse: (budget: Budget) => number | null;
let isExhausted: (budget: Budget) => boolean;
let clock: (at: number) => string;
let dateTime: (at: number) => string;
let remaining: (at: number, now: number) => string;
type Row = { dependency: string; breaker: { state: string }; view?: { budget: { retries: number; limit: number } } };
let incidentSummary: (rows: Row[]) => string;
let urgency: (row: Row) => number;
let forcedFor: (entry: { action: string; durationMs?: number | null; endsAt?: number | null }) => string | null;
type Reading = { at: number; budgetUse: number | null; failureRate: number | null; state: string };
let chartData: (input: {
  history: Reading[];
  samples: Reading[];
  breaker?: { state: string; since: number | null };
  now: number;
}) => {
  from: number;
  spanMs: number;
  readings: Array<Reading & { live: boolean }>;
  lines: Record<'budgetUse' | 'failureRate', Reading[][]>;
  states: Array<{ from: number; to: number; state: string }>;
};

beforeAll(async () => {
  ({ createSseParser } = await import(`${CONSOLE}/events.js`));
  ({ diffLines } = await import(`${CONSOLE}/diff.js`));
  ({ parseDuration, budgetUse, isExhausted, clock, dateTime, remaining, forcedFor } = await import(
    `${CONSOLE}/format.js`
  ));
  ({ chartData } = await import(`${CONSOLE}/chart-data.js`));
  ({ incidentSummary, urgency } = await import(`${CONSOLE}/incident.js`));
});

describe('the console’s Server-Sent Events parser', () => {
  it('reassembles events split anywhere across chunks, skips comments, joins data lines', () => {
    const events: Array<{ event: string; data: string }> = [];
    const feed = createSseParser((event) => events.push(event));
    const stream =
      ': keep-alive\r\n\r\nevent: breaker\ndata: {"dep":"a",\ndata: "state":"open"}\n\ndata: plain\r\n\r\n';
    for (let i = 0; i < stream.length; i += 3) feed(stream.slice(i, i + 3));
    expect(events).toEqual([
      { event: 'breaker', data: '{"dep":"a",\n"state":"open"}' },
      { event: 'message', data: 'plain' },
    ]);
  });
});

it('takes a CRLF split between two chunks as one line end', () => {
  const events: Array<{ event: string; data: string }> = [];
  const feed = createSseParser((event) => events.push(event));
  feed('data: a\r');
  feed('\ndata: b\r\n\r\n');
  expect(events).toEqual([{ event: 'message', data: 'a\nb' }]);
});

describe('the console’s policy diff', () => {
  it('marks removed lines before added ones and keeps the common ones', () => {
    expect(diffLines('{\n  "a": 1,\n  "b": 2\n}', '{\n  "a": 1,\n  "b": 3\n}')).toEqual([
      { kind: 'same', line: '{' },
      { kind: 'same', line: '  "a": 1,' },
      { kind: 'removed', line: '  "b": 2' },
      { kind: 'added', line: '  "b": 3' },
      { kind: 'same', line: '}' },
    ]);
  });
});

describe('the console’s duration field', () => {
  it('reads seconds, minutes and hours; empty is none; anything else is NaN', () => {
    expect([parseDuration('90'), parseDuration('90s'), parseDuration('10m'), parseDuration(' 1h ')]).toEqual([
      90, 90, 600, 3600,
    ]);
    expect(parseDuration('')).toBeNull();
    expect(parseDuration('ten minutes')).toBeNaN();
  });
});

describe('the console’s budget gauge', () => {
  it('weighs an adaptive budget’s net retries against its limit and its retries against its cap', () => {
    const adaptive = { mode: 'adaptive', retries: 14, retriesSucceeded: 6, limit: 10, cap: 30 };
    expect(budgetUse(adaptive)).toBeCloseTo(0.8);
    expect(isExhausted(adaptive)).toBe(false);
    expect(isExhausted({ ...adaptive, retriesSucceeded: 4 })).toBe(true);
    // Every retry succeeded, but the cap is reached.
    expect(budgetUse({ ...adaptive, retries: 30, retriesSucceeded: 30 })).toBe(1);
    expect(isExhausted({ ...adaptive, retries: 30, retriesSucceeded: 30 })).toBe(true);
  });

  it('counts every retry of a fixed budget, or of an answer without the new fields', () => {
    expect(isExhausted({ mode: 'fixed', retries: 10, retriesSucceeded: 6, limit: 10, cap: 10 })).toBe(true);
    expect(budgetUse({ retries: 5, limit: 10 })).toBe(0.5);
    expect(isExhausted({ retries: 10, limit: 10 })).toBe(true);
  });
});

describe('the console’s times', () => {
  it('are UTC ISO 8601 with the zone said, whatever the browser’s locale and zone', () => {
    const at = Date.UTC(2026, 11, 3, 14, 45, 1, 250); // 3 December, not 12 March
    expect([dateTime(at), clock(at)]).toEqual(['2026-12-03T14:45:01Z', '14:45:01Z']);
  });

  it('say how much longer in whole units', () => {
    const now = Date.UTC(2026, 11, 3, 14, 45, 0);
    expect([remaining(now + 40_000, now), remaining(now + 1_794_000, now), remaining(now + 7_500_000, now)]).toEqual([
      '40 s',
      '30 m',
      '2 h 5 m',
    ]);
  });
});

describe('the fleet page’s incident summary and order', () => {
  const row = (dependency: string, state: string, retries = 0, limit = 100): Row => ({
    dependency,
    breaker: { state },
    view: { budget: { retries, limit } },
  });

  it('counts what needs an operator, most urgent first', () => {
    const rows = [
      row('a', 'closed'),
      row('b', 'open'),
      row('c', 'closed', 100, 100),
      row('d', 'forced_open'),
      row('e', 'closed', 7, 7),
      row('f', 'open'),
    ];
    expect(incidentSummary(rows)).toBe('1 forced open · 2 open · 2 budgets exhausted');
    expect([...rows].sort((x, y) => urgency(x) - urgency(y)).map((r) => r.dependency)).toEqual([
      'd',
      'b',
      'f',
      'c',
      'e',
      'a',
    ]);
  });

  it('says when all is calm', () => {
    expect(incidentSummary([row('a', 'closed'), row('b', 'closed')])).toBe(
      'All 2 breakers closed, no budget exhausted.',
    );
  });
});

describe('the console’s audit of a forced state', () => {
  it('says how long a trip or force-close lasts and until when, or that it lasts until reset', () => {
    const endsAt = Date.UTC(2026, 11, 3, 14, 55, 1);
    expect(forcedFor({ action: 'breaker.trip', durationMs: 600_000, endsAt })).toBe('for 10 m, until 14:55:01Z');
    expect(forcedFor({ action: 'breaker.force_close', durationMs: 90_000, endsAt })).toBe(
      'for 1 m 30 s, until 14:55:01Z',
    );
    expect(forcedFor({ action: 'breaker.trip', durationMs: null, endsAt: null })).toBe('until reset');
    expect(forcedFor({ action: 'policy.put', durationMs: null, endsAt: null })).toBeNull();
  });
});

describe('the dependency chart’s readings', () => {
  const now = Date.UTC(2026, 11, 3, 14, 45, 0);
  const reading = (ago: number, state = 'closed', failureRate: number | null = 0) => ({
    at: now - ago,
    budgetUse: 0.1,
    failureRate,
    state,
  });

  it('draws the history before the page’s first reading, then the page’s readings, over up to 15 minutes', () => {
    const history = [
      reading(20 * 60_000),
      reading(600_000),
      reading(590_000, 'closed', null),
      reading(60_000, 'open', 0.9),
      reading(3000),
    ];
    const samples = [reading(4000, 'open', null), reading(2000, 'open', 0.7)];
    const data = chartData({ history, samples, breaker: { state: 'open', since: now - 65_000 }, now });
    // 15 minutes at most: the step of 20 minutes ago is not drawn; the history's step after the page's first reading neither.
    expect(data.spanMs).toBe(15 * 60_000);
    expect(data.readings.map((r) => [now - r.at, r.live])).toEqual([
      [600_000, false],
      [590_000, false],
      [60_000, false],
      [4000, true],
      [2000, true],
    ]);
    // Broken where nothing was reported for more than 25 s, and where nothing was measured.
    const runs = (key: 'budgetUse' | 'failureRate') => data.lines[key].map((run) => run.map((r) => now - r.at));
    expect(runs('budgetUse')).toEqual([[600_000, 590_000], [60_000], [4000, 2000]]);
    expect(runs('failureRate')).toEqual([[600_000], [60_000], [2000]]);
    // The breaker's state: closed as read, then open since it opened, as the breaker says.
    expect(data.states).toEqual([
      { from: now - 600_000, to: now - 65_000, state: 'closed' },
      { from: now - 65_000, to: now, state: 'open' },
    ]);
  });

  it('spans a minute at least, and draws the state the breaker is in without any reading', () => {
    const data = chartData({ history: [], samples: [], breaker: { state: 'forced_open', since: now - 3600_000 }, now });
    expect(data.spanMs).toBe(60_000);
    expect(data.states).toEqual([{ from: now - 60_000, to: now, state: 'forced_open' }]);
  });
});
