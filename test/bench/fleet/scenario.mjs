// The fleet simulation's shared definitions: the dependency's scripted life, the policy every
// strategy is held to, the headers callers mark their requests with, and the options of a run.

/** Every count is kept per bin of this many ms, from the scenario's start. */
export const BIN_MS = 100;

/**
 * The scenarios and their phases, in order. `outage`: a full outage, then a brown-out. `metastable`:
 * a dependency of finite capacity whose capacity drops for a few seconds (the trigger), then
 * normal conditions again: does the fleet come back, or do its retries keep it down?
 */
export const SCENARIOS = {
  outage: ['healthy', 'outage', 'brownout', 'recovery'],
  metastable: ['healthy', 'trigger', 'after'],
};

/**
 * The metastable scenario's dependency: `workers` requests served at once, each taking
 * `serviceMs`, the rest waiting in one FIFO queue of any length. A request is served when its turn
 * comes even if its caller has given up on it (timed out): that wasted work is what sustains the
 * overload. Capacity is workers × 1000 / serviceMs requests/s (200/s); the fleet offers `load` of it
 * (70 %); during the trigger only `triggerWorkers` serve (30 % of the capacity).
 */
export const METASTABLE = Object.freeze({ workers: 20, serviceMs: 100, triggerWorkers: 6, load: 0.7 });
export const metastableCapacityRps = () => (METASTABLE.workers * 1000) / METASTABLE.serviceMs;

/** Goodput counts as recovered once it is at least this, over 1 s windows, for RECOVERED_FOR_MS. */
export const RECOVERED_GOODPUT = 0.95;
export const RECOVERED_FOR_MS = 3000;

/** Headers the callers set on every request, so the dependency can count per caller and kind. */
export const HEADERS = {
  caller: 'x-fleet-caller',
  attempt: 'x-fleet-attempt',
  probe: 'x-fleet-probe',
};

/** The dependency every caller calls, by its name at the coordinator. */
export const DEPENDENCY = 'inventory';

/**
 * The policy of the dependency: the coordinator's (seeded from a policies file), the local
 * fallback's (passed as `fallbackPolicy`, so it is the same document), and the one cockatiel is
 * configured from. The floor is small for the fleet (2 retries/s for everyone), so that a floor
 * per process (local-budget) shows up as the fleet grows.
 */
export const POLICY = Object.freeze({
  retryBudget: { ratio: 0.1, minRetriesPerSecond: 2, windowSeconds: 10, maxAttempts: 3 },
  backoff: { baseMs: 50, capMs: 1000, jitter: 'full' },
  breaker: {
    failureRateThreshold: 0.5,
    slowCallRateThreshold: 1,
    slowCallMs: 1000,
    minimumCalls: 20,
    windowSeconds: 5,
    openMs: 1000,
    maxOpenMs: 2000,
    halfOpenProbes: 1,
    closeAfterSuccesses: 1,
    probeLeaseMs: 2000,
    minReporters: 1,
  },
});

/**
 * The policy a strategy is held to in one part of a run: POLICY, with `breakers: false` the same
 * with breakers that never open (the largest minimumCalls a policy may have), so that only the
 * retry budgets act; the sluice strategies set the budget's mode, and local-budget's fallback
 * counts as the adaptive one does.
 */
export function runPolicy({ breakers, policy: change = {} }, strategy) {
  const base = {
    ...POLICY,
    ...change,
    retryBudget: { ...POLICY.retryBudget, ...change.retryBudget },
    breaker: { ...POLICY.breaker, ...change.breaker },
  };
  const breaker = breakers ? base.breaker : { ...base.breaker, minimumCalls: 1_000_000 };
  const mode = BUDGET_MODES[strategy];
  const retryBudget = mode ? { ...base.retryBudget, mode } : base.retryBudget;
  return Object.freeze({ ...base, retryBudget, breaker });
}

/** The budget mode of each strategy that uses Sluice's budget (the SDK's, or its local fallback's). */
const BUDGET_MODES = { 'local-budget': 'adaptive', 'sluice-fixed': 'fixed', 'sluice-adaptive': 'adaptive' };

/** The strategies that ask the coordinators. */
export const isSluice = (strategy) => strategy.startsWith('sluice');

/** Deadline of one call (every attempt and backoff included), and timeout of one attempt, in ms. */
export const CALL_DEADLINE_MS = 3000;
export const ATTEMPT_TIMEOUT_MS = 1000;

/** Immediate retries of the naive strategy (4 attempts per call). */
export const NAIVE_RETRIES = 3;

export const STRATEGIES = ['naive', 'cockatiel', 'local-budget', 'sluice-fixed', 'sluice-adaptive'];

/** Phase boundaries in ms from the start: { healthy: [0, 4000], outage: [4000, 12000], ... }. */
export function phaseBounds(phases) {
  const bounds = {};
  let at = 0;
  for (const name of Object.keys(phases)) {
    bounds[name] = [at, at + phases[name] * 1000];
    at += phases[name] * 1000;
  }
  return bounds;
}

/** The scenario's length in ms. */
export function scenarioMs(phases) {
  return Object.values(phases).reduce((sum, seconds) => sum + seconds * 1000, 0);
}

/** The phase at `t` ms from the start (`after` once the scenario is over). */
export function phaseAt(phases, t) {
  let at = 0;
  for (const [name, seconds] of Object.entries(phases)) {
    at += seconds * 1000;
    if (t < at) return name;
  }
  return 'after';
}

/**
 * The brown-out's failures, spread evenly and reproducibly: the i-th request of the brown-out
 * (0-based) fails when floor((i + 1) × rate) > floor(i × rate), so any run of requests fails at the
 * rate within one request, whatever order they come in.
 */
export function brownoutFails(index, rate) {
  return Math.floor((index + 1) * rate + 1e-9) > Math.floor(index * rate + 1e-9);
}

/** Options from flags (`--name value` or `--name=value`), then FLEET_* variables, then defaults. */
export function readOptions(argv = process.argv.slice(2), env = process.env) {
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${arg}`);
    const eq = arg.indexOf('=');
    if (eq > 0) flags[arg.slice(2, eq)] = arg.slice(eq + 1);
    else if (arg === '--help') flags.help = 'true';
    else flags[arg.slice(2)] = argv[++i];
  }
  const pick = (flag, variable, fallback) => flags[flag] ?? env[variable] ?? fallback;
  const number = (flag, variable, fallback, min, max) => {
    const value = Number(pick(flag, variable, fallback));
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new Error(`--${flag} (${variable}) must be a number from ${min} to ${max}`);
    }
    return value;
  };
  const list = (flag, variable, fallback) =>
    String(pick(flag, variable, fallback))
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);

  const fleetSizes = list('fleet-sizes', 'FLEET_SIZES', '8,16').map(Number);
  if (fleetSizes.some((n) => !Number.isInteger(n) || n < 1 || n > 256)) {
    throw new Error('--fleet-sizes (FLEET_SIZES) must be integers from 1 to 256, e.g. 8,16');
  }
  const strategies = list('strategies', 'FLEET_STRATEGIES', STRATEGIES.join(','));
  for (const strategy of strategies) {
    if (!STRATEGIES.includes(strategy)) throw new Error(`unknown strategy ${strategy} (${STRATEGIES.join(', ')})`);
  }
  const durations = (flag, variable, fallback, scenario) => {
    const names = SCENARIOS[scenario];
    const values = list(flag, variable, fallback).map(Number);
    if (values.length !== names.length || values.some((s) => !(s > 0 && s <= 600))) {
      throw new Error(`--${flag} (${variable}) must be ${names.length} durations in seconds: ${names.join(',')}`);
    }
    return Object.fromEntries(names.map((name, i) => [name, values[i]]));
  };
  const scenario = pick('scenario', 'FLEET_SCENARIO', 'all');
  if (!['all', ...Object.keys(SCENARIOS)].includes(scenario)) {
    throw new Error(`--scenario (FLEET_SCENARIO) must be all, ${Object.keys(SCENARIOS).join(' or ')}`);
  }
  const breakers = pick('breakers', 'FLEET_BREAKERS', 'both');
  if (!['on', 'off', 'both'].includes(breakers)) throw new Error('--breakers (FLEET_BREAKERS) must be on, off or both');
  const ratePerCaller = pick('rate', 'FLEET_RATE', undefined);
  return {
    help: flags.help === 'true',
    fleetSizes,
    strategies,
    scenarios: scenario === 'all' ? Object.keys(SCENARIOS) : [scenario],
    phases: durations('phases', 'FLEET_PHASES', '2,8,5,1', 'outage'),
    metastablePhases: durations('metastable-phases', 'FLEET_METASTABLE_PHASES', '2,5,20', 'metastable'),
    /** Breakers for the outage scenario: on, off (only the budgets act), or both, one part each. */
    breakers: breakers === 'both' ? [true, false] : [breakers === 'on'],
    /** Offered load of the whole fleet, split evenly across its callers (unless `rate` is set). */
    totalRps: number('total-rps', 'FLEET_TOTAL_RPS', 400, 1, 20_000),
    /** Offered load of each caller; when set, the fleet's load grows with N. */
    ratePerCaller: ratePerCaller === undefined ? undefined : number('rate', 'FLEET_RATE', 50, 0.1, 5000),
    /** A change to POLICY for every strategy, e.g. {"breaker":{"maxOpenMs":1000}}. */
    policy: jsonObject(pick('policy', 'FLEET_POLICY', '{}'), 'policy', 'FLEET_POLICY'),
    brownoutRate: number('brownout-rate', 'FLEET_BROWNOUT_RATE', 0.3, 0, 1),
    retryAfterSeconds: number('retry-after', 'FLEET_RETRY_AFTER', 1, 0, 60),
    latencyMs: number('latency-ms', 'FLEET_LATENCY_MS', 2, 0, 1000),
    /** The SDK's decisionTimeoutMs for the sluice strategy (default: the SDK's own, 50 ms). */
    decisionTimeoutMs:
      pick('decision-timeout-ms', 'FLEET_DECISION_TIMEOUT_MS', undefined) === undefined
        ? undefined
        : number('decision-timeout-ms', 'FLEET_DECISION_TIMEOUT_MS', 50, 1, 60_000),
    /** The coordinators' SLUICE_STORE_TIMEOUT_MS (default: the service's own, 50 ms). */
    storeTimeoutMs:
      pick('store-timeout-ms', 'FLEET_STORE_TIMEOUT_MS', undefined) === undefined
        ? undefined
        : number('store-timeout-ms', 'FLEET_STORE_TIMEOUT_MS', 50, 1, 60_000),
    /**
     * The callers' CPU priority (nice). In a deployment the callers run on hosts of their own; here
     * up to 16 share 2 cores with the coordinators, Redis and the dependency, and at an equal
     * priority they starve them. At 19 they stand in for callers elsewhere.
     */
    callerNice: number('caller-nice', 'FLEET_CALLER_NICE', 19, 0, 19),
    redisUrl: pick('redis-url', 'FLEET_REDIS_URL', 'redis://127.0.0.1:6379'),
    outDir: pick('out', 'FLEET_OUT', undefined),
    chart: pick('chart', 'FLEET_CHART', undefined),
  };
}

function jsonObject(text, flag, variable) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`--${flag} (${variable}) must be a JSON object, e.g. {"breaker":{"maxOpenMs":1000}}`);
  }
  return value;
}

export const USAGE = `npm run bench:fleet -- [options]   (each also as an environment variable)
  --fleet-sizes 8,16         FLEET_SIZES                caller processes, one run per size and strategy
  --strategies a,b           FLEET_STRATEGIES           ${STRATEGIES.join(',')}
  --scenario all             FLEET_SCENARIO             all, outage (full outage, then brown-out) or metastable (a capacity drop)
  --phases 2,8,5,1           FLEET_PHASES               outage scenario: seconds of healthy, outage, brown-out, recovery
  --metastable-phases 2,5,20 FLEET_METASTABLE_PHASES    metastable scenario: seconds of healthy, trigger, after
  --total-rps 400            FLEET_TOTAL_RPS            outage scenario: offered load of the whole fleet, split across its callers
  --rate 50                  FLEET_RATE                 offered load per caller instead (the fleet's grows with N)
  --breakers both            FLEET_BREAKERS             outage scenario: on, off (breakers that never open, only the budgets act) or both
  --policy JSON              FLEET_POLICY               a change to the policy of every strategy, e.g. '{"breaker":{"maxOpenMs":1000}}'
  --brownout-rate 0.3        FLEET_BROWNOUT_RATE        share of 503s during the brown-out
  --retry-after 1            FLEET_RETRY_AFTER          Retry-After (s) on the brown-out's 503s
  --latency-ms 2             FLEET_LATENCY_MS           the dependency's latency when it answers 200
  --decision-timeout-ms 50   FLEET_DECISION_TIMEOUT_MS  the SDK's decisionTimeoutMs (sluice; default: the SDK's)
  --store-timeout-ms 50      FLEET_STORE_TIMEOUT_MS     the coordinators' SLUICE_STORE_TIMEOUT_MS (default: the service's)
  --caller-nice 19           FLEET_CALLER_NICE          the callers' nice value (0: the CPU shared evenly with the rest)
  --redis-url URL            FLEET_REDIS_URL            the Redis both coordinators share (keys under a unique prefix)
  --out DIR                  FLEET_OUT                  raw series (default test/bench/fleet/results)
  --chart FILE               FLEET_CHART                the SVG chart (default fleet.svg in --out; the docs' chart: --chart test/bench/fleet/fleet.svg)`;
