import { ManualClock, seededRandom } from '@sluice/core';
import type { RetryRequest } from '@sluice/protocol';
import { runWithContext } from './context/request-context';
import { Dependency, type AttemptContext } from './dependency';
import type { GiveUpEvent, RetryEvent } from './policy-events';
import { HttpStatusError, isAttemptTimeoutError, type GiveUpError } from './errors';
import { EventEmitter } from './events';
import { CoordinatorLink, silentLogger } from './fleet/coordinator-link';
import { FleetDependency } from './fleet/fleet-dependency';
import type { RetryVerdict } from './fleet/local-guard';
import { DEPENDENCY_DEFAULTS, resolveDependencyOptions, type DependencyOptions } from './options';
import type { AdmitVerdict, SluiceRuntime } from './runtime';
import { TimeoutWatch } from './timeout-watch';
import { Agents } from './transport/http';

const GRANT: RetryVerdict = { allow: true, reason: 'granted', delayMs: 0 };
const unavailable = () => Object.assign(new Error('down'), { status: 503 });

/** A policy over a scripted runtime: decisions, admissions and probes are recorded, nothing goes on the wire. */
function setup(options: DependencyOptions = {}, decide: (request: RetryRequest) => RetryVerdict = () => GRANT) {
  const clock = new ManualClock();
  const fleet = new FleetDependency('pay', undefined, 1);
  const link = new CoordinatorLink(silentLogger, 'local');
  const asked: RetryRequest[] = [];
  const probes: Array<{ token: string; success: boolean }> = [];
  let admitVerdict: AdmitVerdict | undefined = { allow: true, state: 'half_open', probeToken: 'probe-1' };
  const runtime: SluiceRuntime = {
    clock,
    random: seededRandom(1),
    link,
    agents: new Agents(),
    timeouts: new TimeoutWatch(),
    decideRetry: async (_dependency, request) => {
      asked.push(request);
      return decide(request);
    },
    admit: async () => {
      if (!admitVerdict) link.failed('admit', new Error('down'));
      return admitVerdict;
    },
    reportProbe: (_dependency, token, success) => probes.push({ token, success }),
    breakerState: (dependency, now) => (link.fallback ? dependency.local.state(now) : dependency.fleetState(now)),
    tryLocalProbe: (dependency, now) => dependency.local.tryProbe(now),
    governedLocally: () => link.fallback,
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
    setAdmit: (verdict: AdmitVerdict | undefined) => (admitVerdict = verdict),
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
    const breaker = setup({ idempotent: true }, () => ({
      allow: false,
      reason: 'breaker_open',
      delayMs: 0,
      breakerState: 'open',
    }));
    expect(await rejection(breaker.dep.execute(script([last], 1).fn))).toMatchObject({
      isBreakerOpenError: true,
      state: 'open',
      lastError: last,
    });
  });

  it('waits the Retry-After when it is longer than the granted backoff', async () => {
    const { dep, retries, asked } = setup({ idempotent: true }, () => ({ ...GRANT, delayMs: 3 }));
    const limited = new HttpStatusError(new Response('', { status: 429 }), 20, false);
    await dep.execute(script([limited], 1).fn);
    expect(asked[0]).toMatchObject({ status: 429, retryAfterMs: 20 });
    expect(retries[0].delayMs).toBe(20);
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

  it('half-open: asks admit, runs as the probe and reports its outcome at once; refused without a probe', async () => {
    const { dep, fleet, clock, probes, setAdmit } = setup();
    fleet.applyState('open', clock.now() - 1);
    expect(dep.breakerState).toBe('half_open');
    expect(await dep.execute(script([], 'probe ok').fn)).toBe('probe ok');
    expect(probes).toEqual([{ token: 'probe-1', success: true }]);

    setAdmit({ allow: false, state: 'half_open' });
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
