import { ManualClock, seededRandom } from '@sluice/core';
import {
  DEADLINE_HEADER,
  DEFAULT_DEPENDENCY_POLICY,
  mergeDependencyPolicy,
  type AdmitDecision,
  type DependencyPolicyOverride,
  type RetryDecision,
  type RetryAsk,
  type RetryRequest,
} from '@sluice/protocol';
import { contextFromHeaders, runWithContext, runWithDeadline } from './context/request-context';
import type { RetryVerdict } from './decide/decider';
import { FleetDecider } from './decide/fleet-decider';
import { InsuredDecider } from './decide/insured-decider';
import { LocalDecider } from './decide/local-decider';
import { Dependency } from './dependency';
import type { AttemptContext } from './execute-options';
import type { GiveUpEvent, RetryEvent } from './policy-events';
import {
  CoordinatorUnavailableError,
  HttpStatusError,
  isAttemptTimeoutError,
  isLimitedError,
  type GiveUpError,
} from './errors';
import { EventEmitter } from './events';
import { CoordinatorLink, silentLogger } from './fleet/coordinator-link';
import { FleetDependency } from './fleet/fleet-dependency';
import { LeaseKeeper } from './fleet/leases';
import { DEPENDENCY_DEFAULTS, resolveDependencyOptions, type DependencyOptions, type FallbackMode } from './options';
import type { SluiceRuntime } from './runtime';
import { TimeoutWatch } from './timeout-watch';
import { Agents } from './transport/http';

const GRANT: RetryVerdict = { allow: true, reason: 'granted', delayMs: 0 };
const unavailable = () => Object.assign(new Error('down'), { status: 503 });

/** The coordinator's admit answer, as a test writes it: granted, closed breaker, unless told otherwise. */
interface AdmitVerdict {
  allow: boolean;
  reason: AdmitDecision['reason'];
  state: AdmitDecision['breaker']['state'];
  retryAfterMs: number;
  probeToken?: string;
  lease?: { id: string; expiresAt: number };
}

const admitted = (verdict: Partial<AdmitVerdict> = {}): AdmitVerdict => ({
  allow: true,
  reason: 'granted',
  state: 'closed',
  retryAfterMs: 0,
  ...verdict,
});

/** The wire answer of an admit verdict. */
const admitDecision = (verdict: AdmitVerdict): AdmitDecision => ({
  allow: verdict.allow,
  reason: verdict.reason,
  retryAfterMs: verdict.retryAfterMs,
  breaker: { state: verdict.state },
  ...(verdict.probeToken === undefined ? {} : { probe: { token: verdict.probeToken, expiresAt: Date.now() + 1000 } }),
  ...(verdict.lease === undefined ? {} : { lease: verdict.lease }),
  shadow: false,
});

/** The wire answer of a retry verdict. */
const retryDecision = (verdict: RetryVerdict): RetryDecision => ({
  allow: verdict.allow,
  reason: verdict.reason as RetryDecision['reason'],
  delayMs: verdict.delayMs,
  budget: { retries: 0, retriesSucceeded: 0, requests: 0, limit: 10, cap: 10, windowSeconds: 10 },
  breaker: verdict.breaker
    ? { state: verdict.breaker.state, openUntil: verdict.breaker.openUntil, reason: verdict.breaker.operatorReason }
    : { state: 'closed' },
  ...(verdict.breaker?.retryAfterMs ? { retryAfterMs: verdict.breaker.retryAfterMs } : {}),
  ...(verdict.budgetRetryAfterMs ? { retryAfterMs: verdict.budgetRetryAfterMs } : {}),
  shadow: false,
});

/**
 * A policy over the real deciders (the fleet's, insured by the local fallback) with the
 * coordinator's answers scripted: decisions, admissions and probes are recorded, nothing goes on the wire.
 */
function setup(
  options: DependencyOptions = {},
  decide: (request: RetryRequest) => RetryVerdict = () => GRANT,
  fallbackMode: FallbackMode = 'local',
) {
  const clock = new ManualClock();
  const fleet = new FleetDependency('pay', undefined, 1);
  // One failed exchange switches: these cases are about what the fallback decides.
  const link = new CoordinatorLink(silentLogger, fallbackMode, 1);
  const asked: RetryRequest[] = [];
  const probes: Array<{ token: string; success: boolean }> = [];
  /** Admit answers in turn (undefined: the coordinator did not answer; a promise: answered then); the last one repeats. */
  type Scripted = AdmitVerdict | undefined | Promise<AdmitVerdict | undefined>;
  let admitScript: Scripted[] = [admitted({ state: 'half_open', probeToken: 'probe-1' })];
  /** The cost of every admit asked. */
  const admits: number[] = [];
  /** Lease calls, as "release <id>" and "renew <id>". */
  const leaseCalls: string[] = [];
  /** The fallback's warnings. */
  const warnings: string[] = [];
  const timeouts = new TimeoutWatch();
  const leases = new LeaseKeeper(
    {
      releaseLease: async (_dep, id) => void leaseCalls.push(`release ${id}`),
      renewLease: async (_dep, id) => {
        leaseCalls.push(`renew ${id}`);
        return { expiresAt: Date.now() + 1000 };
      },
    },
    link,
    timeouts,
    1000,
  );
  const coordinator = {
    retry: async (_dep: string, request: RetryRequest) => {
      const { requestId: _id, ...asks } = request;
      asked.push(asks);
      return retryDecision(decide(asks));
    },
    retries: async (batch: RetryAsk[]) => {
      const decisions = [];
      for (const { dep, ...ask } of batch) decisions.push(await coordinator.retry(dep, ask));
      return { decisions };
    },
    admit: async (_dep: string, _timeouts: unknown, cost = 1) => {
      admits.push(cost);
      const verdict = await (admitScript.length > 1 ? admitScript.shift() : admitScript[0]);
      if (!verdict) throw new CoordinatorUnavailableError('down');
      return admitDecision(verdict);
    },
  };
  // Answers are waited for as long as they take: the scripts decide when they come. One ask, one answer.
  const fleetDecider = new FleetDecider(
    coordinator,
    link,
    leases,
    clock,
    { decisionTimeoutMs: 60_000, requestTimeoutMs: 60_000 },
    { coalesce: false },
  );
  const logger = { ...silentLogger, warn: (line: string) => warnings.push(line) };
  const local = new LocalDecider(fallbackMode, link, leases, clock, seededRandom(1), logger);
  const runtime: SluiceRuntime = {
    clock,
    realClock: false,
    random: seededRandom(1),
    agents: new Agents(),
    timeouts,
    leases,
    decider: new InsuredDecider(fleetDecider, local, link, clock),
    beforeCall: undefined,
    firstView: (dependency) => dependency.firstView ?? Promise.resolve(),
    reportProbe: (_dependency, token, success) => probes.push({ token, success }),
  };
  const forward = { retry: new EventEmitter<RetryEvent>(), giveUp: new EventEmitter<GiveUpEvent>() };
  const dep = new Dependency('pay', resolveDependencyOptions(DEPENDENCY_DEFAULTS, options), fleet, runtime, forward);
  const retries: RetryEvent[] = [];
  const giveUps: GiveUpEvent[] = [];
  dep.onRetry((event) => retries.push(event));
  dep.onGiveUp((event) => giveUps.push(event));
  return {
    clock,
    fleet,
    link,
    dep,
    asked,
    probes,
    retries,
    giveUps,
    admits,
    leaseCalls,
    warnings,
    setAdmit: (...verdicts: Scripted[]) => (admitScript = verdicts),
    /** Serves the fleet's policy with these limits (and any other override), as a view read would. */
    limit: (override: DependencyPolicyOverride) =>
      fleet.applyView(
        {
          namespace: 'shop',
          dependency: 'pay',
          breaker: { state: 'closed', since: 0, openUntil: null, reason: null, failureRate: 0, slowRate: 0, calls: 0 },
          budget: {
            mode: 'adaptive',
            retries: 0,
            retriesSucceeded: 0,
            requests: 0,
            limit: 100,
            cap: 100,
            windowSeconds: 10,
          },
          reporters: 1,
          usage: { leases: 0, rateRemaining: null },
          latency: { p50: null, p95: null, p99: null, count: 0 },
          policy: mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, override),
        },
        undefined,
        clock.now(),
      ),
  };
}

/** A function failing with `errors` in turn, then answering `value`; records its contexts. */
function script<T>(errors: unknown[], value: T) {
  const contexts: AttemptContext[] = [];
  const fn = async (context: AttemptContext) => {
    contexts.push(context);
    const error = errors[contexts.length - 1];
    if (error !== undefined) throw error;
    return value;
  };
  return { fn, contexts };
}

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as GiveUpError,
  );

describe('Dependency.execute', () => {
  it('retries retriable failures with the coordinator’s grant, numbering attempts and sending what is left', async () => {
    const { dep, asked, retries } = setup({ idempotent: true, deadlineMs: 5000 });
    const { fn, contexts } = script([unavailable(), Object.assign(new Error('reset'), { code: 'ECONNRESET' })], 'ok');

    expect(await dep.execute(fn)).toBe('ok');

    expect(contexts.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(contexts[0].headers).toEqual({ 'sluice-deadline-ms': '3000', 'sluice-attempt': '1' });
    expect(asked).toEqual([
      { attempt: 1, idempotent: true, deadlineMs: 5000, status: 503 },
      { attempt: 2, idempotent: true, deadlineMs: 5000, error: 'connection' },
    ]);
    expect(retries.map((r) => r.attempt)).toEqual([2, 3]);
  });

  it('rethrows a failure that is not retriable as it is, and asks nobody', async () => {
    const { dep, asked } = setup({ idempotent: true });
    const notFound = Object.assign(new Error('missing'), { status: 404 });
    await expect(dep.execute(script([notFound], 1).fn)).rejects.toBe(notFound);
    expect(asked).toEqual([]);
  });

  it('never retries a non-idempotent call without a key; with a key it retries a 503 but not a 500', async () => {
    const { dep, asked, giveUps } = setup();
    const error = await rejection(dep.execute(script([unavailable()], 1).fn));
    expect(error).toMatchObject({ isGiveUpError: true, reason: 'not_idempotent', attempts: 1 });
    expect(asked).toEqual([]);

    const keyed = script([unavailable()], 'done');
    expect(await dep.execute(keyed.fn, { idempotencyKey: 'k-1' })).toBe('done');
    expect(keyed.contexts.map((c) => c.headers['idempotency-key'])).toEqual(['k-1', 'k-1']);

    const internal = Object.assign(new Error('bug'), { status: 500 });
    expect(await rejection(dep.execute(script([internal], 1).fn, { idempotencyKey: 'k-2' }))).toMatchObject({
      reason: 'not_idempotent',
      lastError: internal,
    });
    expect(giveUps.map((g) => g.reason)).toEqual(['not_idempotent', 'not_idempotent']);
  });

  it('gives up with the coordinator’s reason and the last error; breaker_open is a BreakerOpenError', async () => {
    const budget = setup({ idempotent: true }, () => ({ allow: false, reason: 'budget_exhausted', delayMs: 0 }));
    const last = unavailable();
    expect(await rejection(budget.dep.execute(script([last], 1).fn))).toMatchObject({
      reason: 'budget_exhausted',
      lastError: last,
      attempts: 1,
    });
    const openUntil = Date.now() + 30_000;
    const breaker = setup({ idempotent: true }, () => ({
      allow: false,
      reason: 'breaker_open',
      delayMs: 0,
      breaker: { state: 'open', operatorReason: null, openUntil, retryAfterMs: 29_000 },
    }));
    expect(await rejection(breaker.dep.execute(script([last], 1).fn))).toMatchObject({
      isBreakerOpenError: true,
      reason: 'breaker_open',
      state: 'open',
      operatorReason: null,
      openUntil,
      retryAfterMs: 29_000,
      lastError: last,
      cause: last,
    });
  });

  it('waits out the Retry-After before it asks: the ask does not carry it, and the granted backoff follows', async () => {
    let askedAt = 0;
    const { dep, retries, asked } = setup({ idempotent: true }, () => {
      askedAt = performance.now();
      return { ...GRANT, delayMs: 3 };
    });
    const limited = new HttpStatusError(new Response('', { status: 429 }), 20, false);
    const attemptsAt: number[] = [];
    const result = await dep.execute((context) => {
      attemptsAt.push(performance.now());
      if (context.attempt === 1) throw limited;
      return 'second';
    });
    expect(result).toBe('second');
    expect(asked).toEqual([{ attempt: 1, idempotent: true, deadlineMs: expect.any(Number), status: 429 }]);
    // Timers never end early: the ask came at least the Retry-After after the failure, the retry after it.
    expect(askedAt - attemptsAt[0]).toBeGreaterThanOrEqual(20);
    expect(attemptsAt[1] - askedAt).toBeGreaterThanOrEqual(3);
    expect(retries[0].delayMs).toBe(3);
  });

  describe('a budget denial after a Retry-After', () => {
    const exhausted = (budgetRetryAfterMs: number): RetryVerdict => ({
      allow: false,
      reason: 'budget_exhausted',
      delayMs: 0,
      budgetRetryAfterMs,
    });
    const askedAt: number[] = [];
    /** The coordinator's answers in turn, the last one repeated; each ask's time is kept. */
    const answering = (...verdicts: RetryVerdict[]) => {
      askedAt.length = 0;
      return () => {
        askedAt.push(performance.now());
        return verdicts.length > 1 ? verdicts.shift()! : verdicts[0];
      };
    };
    const failing = (retryAfterMs?: number) => new HttpStatusError(new Response('', { status: 503 }), retryAfterMs, false);

    it('waits once for the budget when it frees within the Retry-After, and asks again', async () => {
      const { dep, asked } = setup({ idempotent: true }, answering(exhausted(15), GRANT));
      expect(await dep.execute(script([failing(20)], 'second').fn)).toBe('second');
      expect(asked).toHaveLength(2);
      expect(askedAt[1] - askedAt[0]).toBeGreaterThanOrEqual(15);
    });

    it('a second denial ends the call', async () => {
      const { dep, asked } = setup({ idempotent: true }, answering(exhausted(15)));
      const error = await rejection(dep.execute(script([failing(20)], 1).fn));
      expect(error).toMatchObject({ reason: 'budget_exhausted', attempts: 1 });
      expect(asked).toHaveLength(2);
    });

    it('without a Retry-After, or when the budget frees later than it, or past the deadline, the call ends at once', async () => {
      for (const [retryAfterMs, budgetMs] of [
        [undefined, 15],
        [20, 50],
      ] as const) {
        const { dep, asked } = setup({ idempotent: true }, answering(exhausted(budgetMs), GRANT));
        const error = await rejection(dep.execute(script([failing(retryAfterMs)], 1).fn));
        expect(error).toMatchObject({ reason: 'budget_exhausted', attempts: 1 });
        expect(asked).toHaveLength(1);
      }
      // The ask comes 10 ms (on the call's clock) into a 20 ms deadline: a wait of 15 does not fit.
      const ask = answering(exhausted(15), GRANT);
      const late = setup({ idempotent: true }, () => {
        late.clock.advance(10);
        return ask();
      });
      const error = await rejection(late.dep.execute(script([failing(5)], 1).fn, { deadlineMs: 20 }));
      expect(error).toMatchObject({ reason: 'budget_exhausted', attempts: 1 });
      expect(late.asked).toHaveLength(1);
    });
  });

  it('a Retry-After that would reach the deadline ends the call without an ask', async () => {
    const { dep, asked } = setup({ idempotent: true });
    const limited = new HttpStatusError(new Response('', { status: 503 }), 5000, false);
    const error = await rejection(dep.execute(script([limited], 1).fn, { deadlineMs: 1000 }));
    expect(error).toMatchObject({ isDeadlineExceededError: true, attempts: 1 });
    expect(asked).toEqual([]);
  });

  it('stops at maxAttempts', async () => {
    const { dep } = setup({ idempotent: true, maxAttempts: 2 });
    const error = await rejection(dep.execute(script([unavailable(), unavailable()], 1).fn));
    expect([error.reason, error.attempts]).toEqual(['max_attempts', 2]);
  });

  it('while serving a retry it does not retry, and tells its caller so; unless configured to', async () => {
    const pushed: string[] = [];
    const { dep, asked } = setup({ idempotent: true });
    const error = await runWithContext({ attempt: 2, pushback: (reason) => pushed.push(reason) }, () =>
      rejection(dep.execute(script([unavailable()], 1).fn)),
    );
    expect(error.reason).toBe('upstream_retry');
    expect(pushed).toEqual(['upstream_retry']);
    expect(asked).toEqual([]);

    const eager = setup({ idempotent: true, retryWhenServingRetry: true });
    expect(await runWithContext({ attempt: 2 }, () => eager.dep.execute(script([unavailable()], 'ok').fn))).toBe('ok');
  });

  it('does not retry a dependency that says it already retried downstream', async () => {
    const { dep, asked } = setup({ idempotent: true });
    const pushback = new HttpStatusError(new Response('', { status: 503 }), undefined, true);
    expect((await rejection(dep.execute(script([pushback], 1).fn))).reason).toBe('downstream_retried');
    expect(asked).toEqual([]);
  });

  it('refuses at once, without calling, while the breaker is open or forced open', async () => {
    const { dep, fleet } = setup();
    fleet.applyState('forced_open', null);
    const { fn, contexts } = script([], 1);
    expect(await rejection(dep.execute(fn))).toMatchObject({
      isBreakerOpenError: true,
      state: 'forced_open',
      attempts: 0,
    });
    expect(contexts).toHaveLength(0);
  });

  it('a refusal carries what the fleet said of the breaker: the operator’s reason, openUntil and retryAfterMs', async () => {
    const { dep, fleet, clock } = setup();
    fleet.applyState('forced_open', clock.now() + 60_000, 'bad deploy');
    const error = await rejection(dep.execute(script([], 1).fn));
    expect(error).toMatchObject({
      isBreakerOpenError: true,
      reason: 'breaker_open',
      state: 'forced_open',
      operatorReason: 'bad deploy',
      openUntil: clock.now() + 60_000,
      retryAfterMs: 60_000,
    });
    expect(error.message).toBe('pay: the circuit breaker is forced_open (bad deploy), for 1 m 0 s more');
    // An automatic open has no operator's reason; a forced state held until reset has no end.
    fleet.applyState('open', clock.now() + 5000, null);
    expect(await rejection(dep.execute(script([], 1).fn))).toMatchObject({
      state: 'open',
      operatorReason: null,
      retryAfterMs: 5000,
    });
    fleet.applyState('forced_open', null, 'maintenance');
    expect(await rejection(dep.execute(script([], 1).fn))).toMatchObject({
      operatorReason: 'maintenance',
      openUntil: null,
      retryAfterMs: null,
    });
  });

  it('half-open: asks admit, runs as the probe and reports its outcome at once; refused without a probe', async () => {
    const { dep, fleet, clock, probes, setAdmit } = setup();
    fleet.applyState('open', clock.now() - 1);
    expect(dep.breakerState).toBe('half_open');
    expect(await dep.execute(script([], 'probe ok').fn)).toBe('probe ok');
    expect(probes).toEqual([{ token: 'probe-1', success: true }]);

    setAdmit(admitted({ allow: false, reason: 'breaker_open', state: 'half_open' }));
    expect(await rejection(dep.execute(script([], 1).fn))).toMatchObject({
      isBreakerOpenError: true,
      state: 'half_open',
    });
  });

  it('half-open with the coordinator away: the local breaker decides', async () => {
    const { dep, fleet, clock, setAdmit, probes } = setup();
    fleet.applyState('open', clock.now() - 1);
    setAdmit(undefined);
    expect(await dep.execute(script([], 'ok').fn)).toBe('ok'); // the local breaker is closed
    expect(probes).toEqual([]);
  });

  it('no attempt is sent once the request’s deadline has run out', async () => {
    const { dep, clock } = setup();
    const { fn, contexts } = script([], 1);
    const error = await runWithContext({ attempt: 1, deadlineAt: clock.now() }, () => rejection(dep.execute(fn)));
    expect(error).toMatchObject({ isDeadlineExceededError: true, attempts: 0 });
    expect(contexts).toHaveLength(0);
  });

  it('a request that came with no time left sends nothing, whatever the clock that read its headers', async () => {
    const { dep, clock } = setup();
    const { fn, contexts } = script([], 1);
    // The middleware read the header on the system clock; the SDK's clock is a millisecond behind it.
    const system = { now: () => clock.now() + 1 };
    const context = contextFromHeaders({ [DEADLINE_HEADER]: '0' }, { clock: system });
    const error = await runWithContext(context, () => rejection(dep.execute(fn)));
    expect(error).toMatchObject({ isDeadlineExceededError: true, attempts: 0 });
    expect(contexts).toHaveLength(0);
    expect(await runWithDeadline(0, () => rejection(dep.execute(fn)), system)).toMatchObject({ attempts: 0 });
    expect(contexts).toHaveLength(0);
  });

  it('the deadline bounds the loop: a failure after it has passed is not retried', async () => {
    const { dep, clock, asked } = setup({ idempotent: true });
    const fn = async () => {
      clock.advance(2000);
      throw unavailable();
    };
    const error = await rejection(dep.execute(fn, { deadlineMs: 1000 }));
    expect(error).toMatchObject({ isDeadlineExceededError: true, attempts: 1 });
    expect(asked).toEqual([]);
  });

  it('a retry whose backoff would pass the deadline is not waited for', async () => {
    const { dep } = setup({ idempotent: true }, () => ({ ...GRANT, delayMs: 5000 }));
    const error = await rejection(dep.execute(script([unavailable()], 1).fn, { deadlineMs: 1000 }));
    expect(error).toMatchObject({ isDeadlineExceededError: true });
  });

  it('aborts an attempt at its timeout and retries it', async () => {
    const { dep } = setup({ idempotent: true, timeoutMs: 10 });
    const signals: AbortSignal[] = [];
    let calls = 0;
    const result = await dep.execute(({ signal }) => {
      signals.push(signal);
      return ++calls === 1 ? new Promise<string>(() => undefined) : 'second';
    });
    expect(result).toBe('second');
    expect(signals[0].aborted).toBe(true);
    expect(isAttemptTimeoutError(signals[0].reason)).toBe(true);
  });

  it('the caller’s signal aborts the attempt and the call, with its reason, without a retry', async () => {
    const { dep, asked } = setup({ idempotent: true });
    const controller = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    const call = dep.execute(({ signal }) => {
      attemptSignal = signal;
      return new Promise(() => undefined);
    }, controller.signal);
    controller.abort(new Error('caller gone'));
    await expect(call).rejects.toThrow('caller gone');
    expect(attemptSignal?.aborted).toBe(true);
    expect(asked).toEqual([]);
  });

  it('hedging: a second attempt after the delay, granted as a retry; the first answer wins and the other is aborted', async () => {
    const { dep, asked, retries } = setup({ idempotent: true, hedge: { delayMs: 5 } });
    const signals: AbortSignal[] = [];
    const result = await dep.execute(({ signal, attempt, hedge }) => {
      signals.push(signal);
      return attempt === 1 ? new Promise<string>(() => undefined) : Promise.resolve(hedge ? 'hedge' : 'other');
    });
    expect(result).toBe('hedge');
    expect(signals[0].aborted).toBe(true);
    expect(asked).toEqual([{ attempt: 1, idempotent: true, deadlineMs: 10_000 }]);
    expect(retries).toEqual([expect.objectContaining({ attempt: 2, hedge: true, delayMs: 0 })]);
  });

  it('hedging denied by the budget: the first attempt alone decides', async () => {
    const { dep } = setup({ idempotent: true, hedge: { delayMs: 1 } }, () => ({
      allow: false,
      reason: 'budget_exhausted',
      delayMs: 0,
    }));
    const result = await dep.execute(() => new Promise<string>((resolve) => setTimeout(() => resolve('first'), 20)));
    expect(result).toBe('first');
  });

  it('uses the fleet’s p99 for the automatic timeout and its p95 for the hedge delay', () => {
    const { dep, fleet } = setup({ autoTimeout: { minMs: 50, maxMs: 1000 }, hedge: { delayMs: 'p95' } });
    expect([dep.attemptTimeoutMs, dep.hedgeDelayMs]).toEqual([1000, 100]);
    fleet.latency = { p50: 5, p95: 42.5, p99: 120, count: 500 };
    expect([dep.attemptTimeoutMs, dep.hedgeDelayMs]).toEqual([240, 43]);
    fleet.latency = { p50: 1, p95: 2, p99: 3, count: 500 };
    expect(dep.attemptTimeoutMs).toBe(50);
  });

  it('a synchronous function and a thrown synchronous error are handled alike', async () => {
    const { dep } = setup({ idempotent: true });
    expect(await dep.execute(() => 7)).toBe(7);
    let first = true;
    expect(
      await dep.execute(() => {
        if (first) {
          first = false;
          throw unavailable();
        }
        return 8;
      }),
    ).toBe(8);
  });
});

describe('Dependency.execute under rate and concurrency limits', () => {
  const CONCURRENCY = { concurrency: { limit: 2, leaseMs: 2000 } };
  const RATE = { rateLimit: { rate: 3, periodMs: 3_600_000, burst: 3 } };
  const lease = (id: string) => admitted({ lease: { id, expiresAt: Date.now() + 2000 } });
  const refused = (reason: 'rate_limited' | 'concurrency_limited', retryAfterMs: number) =>
    admitted({ allow: false, reason, retryAfterMs });
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('an unlimited dependency with a closed breaker never asks admit', async () => {
    const { dep, admits, limit } = setup();
    expect(await dep.execute(() => 1)).toBe(1);
    limit({ breaker: { minimumCalls: 5 } });
    expect(await dep.execute(() => 2, { cost: 3 })).toBe(2);
    expect(admits).toEqual([]);
  });

  it('asks admit before every attempt, with the cost, and releases each lease when its attempt settles', async () => {
    const { dep, admits, leaseCalls, limit, setAdmit } = setup({ idempotent: true });
    limit(CONCURRENCY);
    setAdmit(lease('first'), lease('second'));
    const { fn, contexts } = script([unavailable()], 'ok');
    expect(await dep.execute(fn, { cost: 2 })).toBe('ok');
    expect(contexts.map((c) => c.attempt)).toEqual([1, 2]);
    expect(admits).toEqual([2, 2]);
    expect(leaseCalls).toEqual(['release first', 'release second']);
  });

  it('releases the lease when the attempt fails, times out or is aborted by the caller', async () => {
    const { dep, leaseCalls, limit, setAdmit } = setup({ timeoutMs: 10 });
    limit(CONCURRENCY);
    setAdmit(lease('held'));
    const notFound = Object.assign(new Error('missing'), { status: 404 });
    await expect(dep.execute(script([notFound], 1).fn)).rejects.toBe(notFound);
    expect(leaseCalls).toEqual(['release held']);

    const timedOut = await rejection(dep.execute(() => new Promise(() => undefined)));
    expect(isAttemptTimeoutError(timedOut.lastError)).toBe(true);
    expect(leaseCalls).toHaveLength(2);

    const controller = new AbortController();
    const call = dep.execute(() => new Promise(() => undefined), controller.signal);
    await tick();
    controller.abort(new Error('caller gone'));
    await expect(call).rejects.toThrow('caller gone');
    expect(leaseCalls).toEqual(['release held', 'release held', 'release held']);
  });

  it('renews a lease on the shared timer while its attempt outlives half of it, then releases it', async () => {
    const { dep, leaseCalls, limit, setAdmit } = setup({ timeoutMs: 1000 });
    limit({ concurrency: { limit: 1, leaseMs: 100 } });
    setAdmit(lease('long'));
    const result = await dep.execute(() => new Promise((resolve) => setTimeout(() => resolve('done'), 130)));
    expect(result).toBe('done');
    expect(leaseCalls.filter((c) => c === 'renew long').length).toBeGreaterThanOrEqual(1);
    expect(leaseCalls[leaseCalls.length - 1]).toBe('release long');
    const released = leaseCalls.length;
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(leaseCalls).toHaveLength(released); // no renewal after the release
  });

  it('a refusal that would outlast the deadline is a LimitedError at once, and the call is not made', async () => {
    const { dep, limit, setAdmit, giveUps, admits } = setup();
    limit(RATE);
    setAdmit(refused('rate_limited', 1_200_000));
    const { fn, contexts } = script([], 1);
    const error = await rejection(dep.execute(fn));
    expect(isLimitedError(error)).toBe(true);
    expect(error).toMatchObject({ isGiveUpError: true, reason: 'rate_limited', retryAfterMs: 1_200_000, attempts: 0 });
    expect(error.message).toBe('pay: the rate limit refused the call (retry after 1200000 ms)');
    expect(contexts).toHaveLength(0);
    expect(admits).toHaveLength(1);
    expect(giveUps.map((g) => g.reason)).toEqual(['rate_limited']);
  });

  it('waits out a rate limit’s retryAfterMs and asks again; a refusal is no attempt', async () => {
    const { dep, limit, setAdmit, admits } = setup({ maxAttempts: 1 });
    limit(RATE);
    setAdmit(refused('rate_limited', 5), refused('rate_limited', 5), admitted());
    const { fn, contexts } = script([], 'ok');
    const started = Date.now();
    expect(await dep.execute(fn)).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(8);
    expect(admits).toHaveLength(3);
    expect(contexts.map((c) => c.attempt)).toEqual([1]);
  });

  it('a concurrency refusal waits a backoff below retryAfterMs; whenLimited fail, or no time left, gives up at once', async () => {
    const slow = { backoff: { baseMs: 60_000, capMs: 60_000, jitter: 'none' as const } };
    const waiting = setup();
    waiting.limit({ ...CONCURRENCY, ...slow });
    waiting.setAdmit(refused('concurrency_limited', 3), lease('slot'));
    expect(await waiting.dep.execute(() => 'in')).toBe('in');
    expect(waiting.admits).toHaveLength(2);

    const failing = setup({ whenLimited: 'fail' });
    failing.limit(CONCURRENCY);
    failing.setAdmit(refused('concurrency_limited', 3));
    const error = await rejection(failing.dep.execute(() => 'never'));
    expect(error).toMatchObject({ isLimitedError: true, reason: 'concurrency_limited', retryAfterMs: 3 });
    expect(failing.admits).toHaveLength(1);

    const late = setup();
    late.limit({ ...CONCURRENCY, backoff: { baseMs: 50, capMs: 50, jitter: 'none' } });
    late.setAdmit(refused('concurrency_limited', 2000));
    expect(await rejection(late.dep.execute(() => 'never', { deadlineMs: 40 }))).toMatchObject({
      isLimitedError: true,
      attempts: 0,
    });
  });

  it('the caller’s abort ends a wait for a limit', async () => {
    const { dep, limit, setAdmit, admits } = setup();
    limit(RATE);
    setAdmit(refused('rate_limited', 5000));
    const controller = new AbortController();
    const call = dep.execute(() => 'never', controller.signal);
    await tick();
    controller.abort(new Error('caller gone'));
    await expect(call).rejects.toThrow('caller gone');
    expect(admits).toHaveLength(1);
  });

  it('checks the cost: a positive integer, at most the rate limit’s burst', async () => {
    const { dep, limit, admits } = setup();
    await expect(dep.execute(() => 1, { cost: 0 })).rejects.toThrow(TypeError);
    await expect(dep.execute(() => 1, { cost: 1.5 })).rejects.toThrow(TypeError);
    limit(RATE);
    await expect(dep.execute(() => 1, { cost: 4 })).rejects.toThrow(
      new RangeError("pay: a cost of 4 exceeds the rate limit's burst (3)"),
    );
    expect(admits).toEqual([]);
  });

  it('shadow mode: the coordinator allows what it would refuse, and the call proceeds without a lease', async () => {
    const { dep, limit, setAdmit, leaseCalls } = setup();
    limit({ ...CONCURRENCY, mode: 'shadow' });
    setAdmit(admitted({ allow: true, reason: 'concurrency_limited', retryAfterMs: 800 }));
    expect(await dep.execute(() => 'shadowed')).toBe('shadowed');
    expect(leaseCalls).toEqual([]);
  });

  it('half-open and limited: one admit hands out the probe and the lease; both are settled', async () => {
    const { dep, fleet, clock, limit, setAdmit, probes, leaseCalls, admits } = setup();
    limit(CONCURRENCY);
    fleet.applyState('open', clock.now() - 1);
    setAdmit(admitted({ state: 'half_open', probeToken: 'probe-9', lease: { id: 'probe-lease', expiresAt: 0 } }));
    expect(await dep.execute(() => 'probed')).toBe('probed');
    expect(admits).toHaveLength(1);
    expect(probes).toEqual([{ token: 'probe-9', success: true }]);
    expect(leaseCalls).toEqual(['release probe-lease']);
  });

  it('a dependency met for the first time waits for its first view, and so learns its limits', async () => {
    const { dep, fleet, limit, admits, setAdmit } = setup();
    setAdmit(admitted());
    fleet.firstView = new Promise((resolve) =>
      setTimeout(() => {
        limit(RATE);
        resolve();
      }, 5),
    );
    expect(await dep.execute(() => 1)).toBe(1);
    expect(admits).toEqual([1]);
  });

  it('a hedge is admitted too: refused, there is no hedge; granted, both leases are released', async () => {
    const { dep, limit, setAdmit, leaseCalls } = setup({ idempotent: true, hedge: { delayMs: 5 } });
    limit(CONCURRENCY);
    setAdmit(lease('first'), refused('concurrency_limited', 1000));
    const hedges: boolean[] = [];
    const first = await dep.execute(({ hedge }) => {
      hedges.push(hedge);
      return new Promise((resolve) => setTimeout(() => resolve('first'), 30));
    });
    expect([first, hedges]).toEqual(['first', [false]]);
    expect(leaseCalls).toEqual(['release first']);

    setAdmit(lease('slow'), lease('hedge'));
    const won = await dep.execute(({ attempt }) => (attempt === 1 ? new Promise(() => undefined) : 'hedged'));
    expect(won).toBe('hedged');
    expect(leaseCalls).toEqual(['release first', 'release hedge', 'release slow']);
  });

  it('coordinator away, local fallback: the limits are kept on local counts, until the calls it let out end', async () => {
    const { dep, limit, setAdmit, admits, link } = setup({ whenLimited: 'fail' });
    limit({ concurrency: { limit: 1, leaseMs: 2000 } });
    setAdmit(undefined);
    let finish: (value: string) => void = () => undefined;
    const first = dep.execute(() => new Promise<string>((resolve) => (finish = resolve)));
    await tick();
    expect(link.fallback).toBe(true);
    // The coordinator is known to be away: no admit is asked, the local count refuses.
    expect(await rejection(dep.execute(() => 'second'))).toMatchObject({
      isLimitedError: true,
      reason: 'concurrency_limited',
    });
    // The coordinator answers again while the locally admitted call runs: it knows nothing of that
    // call, so the local count still refuses, before the coordinator is asked.
    link.succeeded('report');
    expect(await rejection(dep.execute(() => 'second'))).toMatchObject({ reason: 'concurrency_limited' });
    expect(admits).toHaveLength(1);
    finish('first');
    expect(await first).toBe('first');
    setAdmit(lease('back'));
    expect(await dep.execute(() => 'third')).toBe('third');
    expect(admits).toHaveLength(2);
  });

  it('a fleet grant that comes while the fallback has filled the local count is given back', async () => {
    const { dep, limit, setAdmit, link, leaseCalls } = setup({ whenLimited: 'fail' });
    limit({ concurrency: { limit: 1, leaseMs: 2000 } });
    let answer: (verdict: AdmitVerdict) => void = () => undefined;
    setAdmit(new Promise<AdmitVerdict>((resolve) => (answer = resolve)), undefined);
    const slow = dep.execute(() => 'slow'); // its admit is under way
    await tick();
    // Meanwhile another call finds the coordinator away, and the fallback lets it out.
    let finish: (value: string) => void = () => undefined;
    const local = dep.execute(() => new Promise<string>((resolve) => (finish = resolve)));
    await tick();
    expect(link.fallback).toBe(true);
    answer(lease('late-grant'));
    expect(await rejection(slow)).toMatchObject({ isLimitedError: true, reason: 'concurrency_limited' });
    expect(leaseCalls).toEqual(['release late-grant']);
    finish('local');
    expect(await local).toBe('local');
  });

  it('coordinator away, fail-open lets calls through and says so; fail-closed refuses them', async () => {
    const open = setup({}, () => GRANT, 'fail-open');
    open.limit(RATE);
    open.setAdmit(undefined);
    expect(await open.dep.execute(() => 'through')).toBe('through');
    expect(await open.dep.execute(() => 'again')).toBe('again');
    // Said once for the outage, not per call.
    expect(open.warnings).toEqual([
      'pay: rate and concurrency limits go unchecked while the coordinator is away (fail-open fallback)',
    ]);

    const closed = setup({}, () => GRANT, 'fail-closed');
    closed.limit(RATE);
    closed.setAdmit(undefined);
    const { fn, contexts } = script([], 'never');
    expect(await rejection(closed.dep.execute(fn))).toMatchObject({
      isGiveUpError: true,
      reason: 'coordinator_unavailable',
      attempts: 0,
    });
    expect(contexts).toHaveLength(0);
  });
});
