import { ManualClock } from '@sluice/core';
import type { AdmitDecision, RetryAsk, RetryDecision, RetryRequest } from '@sluice/protocol';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinatorLink, silentLogger } from '../fleet/coordinator-link';
import { FleetDependency } from '../fleet/fleet-dependency';
import { LeaseKeeper } from '../fleet/leases';
import { TimeoutWatch } from '../timeout-watch';
import { FleetDecider } from './fleet-decider';
import { grantedDecision } from '../../../../test/support/decisions';

const GRANT = grantedDecision({
  budget: { retries: 1, retriesSucceeded: 0, requests: 10, limit: 5, cap: 5, windowSeconds: 10 },
});

/**
 * A coalescing decider on a manual clock, whose coordinator answers each ask with `decide` and
 * each admission with `admit`.
 */
function deciderFor(
  decide: (request: RetryRequest) => Promise<RetryDecision>,
  admit: () => Promise<AdmitDecision> = async () => {
    throw new Error('not used');
  },
) {
  const transport = {
    retry: (_dep: string, request: RetryRequest) => decide(request),
    retries: async (asks: RetryAsk[]) => ({ decisions: await Promise.all(asks.map((ask) => decide(ask))) }),
    admit,
  };
  const link = new CoordinatorLink(silentLogger, 'local', 1);
  const leases = new LeaseKeeper(
    { releaseLease: async () => undefined, renewLease: async () => ({ expiresAt: 0 }) },
    link,
    new TimeoutWatch(),
    1000,
  );
  const clock = new ManualClock();
  const decider = new FleetDecider(transport, link, leases, clock, { decisionTimeoutMs: 200, requestTimeoutMs: 1000 });
  return { decider, clock, link, dependency: new FleetDependency('pay', undefined, 1) };
}

/**
 * A coalescing decider whose coordinator answers the first ask only when told to, on a manual
 * clock: what the caller's wait leaves once that answer comes is up to the test.
 */
function setup() {
  const asked: RetryRequest[] = [];
  let answerFirst: () => void = () => undefined;
  const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
  const decide = async (request: RetryRequest): Promise<RetryDecision> => {
    asked.push(request);
    if (asked.length === 1) await firstAnswered;
    return GRANT;
  };
  return { ...deciderFor(decide), asked, answerFirst };
}

async function untilAsked(asked: unknown[], count: number): Promise<void> {
  while (asked.length < count) await sleep(1);
}

describe('FleetDecider: retry asks made while another is under way', () => {
  it('sends an ask that waited for the one under way, with the deadline it has left', async () => {
    const { decider, clock, asked, answerFirst, link, dependency } = setup();
    const first = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 1000 });
    await untilAsked(asked, 1);
    // The second waits for the first (its denial might hold); the process is busy for 160 of the
    // 200 ms of decision time meanwhile: the wait is the call's, not the coordinator's.
    const second = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 1000 });
    clock.advance(160);
    answerFirst();

    expect((await first)?.reason).toBe('granted');
    expect((await second)?.reason).toBe('granted');
    // 160 ms on the client's clock, and the coalescing window's few real ones.
    expect(asked[1].deadlineMs).toBeLessThanOrEqual(840);
    expect(asked[1].deadlineMs).toBeGreaterThan(700);
    expect(link.fallback).toBe(false);
  });

  it('does not send an ask whose deadline passed while it waited: the call is past its deadline', async () => {
    const { decider, clock, asked, answerFirst, dependency } = setup();
    const first = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 1000 });
    await untilAsked(asked, 1);
    const second = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 100 });
    clock.advance(160);
    answerFirst();

    expect((await first)?.reason).toBe('granted');
    expect(await second).toEqual({ allow: false, reason: 'deadline_exceeded', delayMs: 0 });
    expect(asked).toHaveLength(1);
  });
});

describe('FleetDecider: the decision timeout runs from when the ask goes out', () => {
  it('waits for the answer the whole decision time after the send, however long the ask waited in a busy process', async () => {
    const asked: RetryRequest[] = [];
    const { decider, dependency } = deciderFor(async (request) => {
      asked.push(request);
      await sleep(5);
      return GRANT;
    });

    const decision = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 5000 });
    // The process is busy longer than the decision time before the coalescing window's timer runs.
    const busyUntil = Date.now() + 250;
    while (Date.now() < busyUntil);

    expect((await decision)?.reason).toBe('granted');
    expect(asked).toHaveLength(1);
  });
});

describe('FleetDecider: a probe granted in an answer that came too late', () => {
  /**
   * A decider whose coordinator answers the first admission (a grant holding the probe `late-1`,
   * expiring `probeMs` after the ask) only when told to, after the caller stopped waiting, and
   * every later one with a refusal: while the fleet's probe is leased, nobody else gets one.
   */
  function setupLateProbe(probeMs = 10_000) {
    const admitted: number[] = [];
    let answerFirst: () => void = () => undefined;
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    const { decider, clock, dependency } = deciderFor(
      async () => GRANT,
      async () => {
        admitted.push(Date.now());
        if (admitted.length > 1) {
          return {
            allow: false,
            reason: 'breaker_open',
            retryAfterMs: 0,
            breaker: { state: 'half_open' },
            shadow: false,
          };
        }
        const expiresAt = Date.now() + probeMs;
        await firstAnswered;
        return {
          allow: true,
          reason: 'granted',
          retryAfterMs: 0,
          breaker: { state: 'half_open' },
          probe: { token: 'late-1', expiresAt },
          shadow: false,
        };
      },
    );
    dependency.applyState('half_open');
    /** The first admission, given up on; resolves once its late answer has been handled. */
    const lateAdmission = async (meanwhile: () => void = () => undefined) => {
      expect(await decider.admit(dependency, 1, 'half_open')).toBeUndefined();
      meanwhile();
      answerFirst();
      await sleep(5);
    };
    return { decider, clock, dependency, admitted, lateAdmission };
  }

  it('lets the next attempt on the half-open breaker out as that probe, without asking again', async () => {
    const { decider, dependency, admitted, lateAdmission } = setupLateProbe();
    await lateAdmission();

    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({
      allow: true,
      probe: { token: 'late-1' },
      permit: undefined,
    });
    expect(admitted).toHaveLength(1);
    // Taken once: the attempt after it asks, and the fleet refuses it while the probe is out.
    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({ allow: false, reason: 'breaker_open' });
    expect(admitted).toHaveLength(2);
  });

  it('does not use a kept probe once it has expired', async () => {
    const { decider, clock, dependency, admitted, lateAdmission } = setupLateProbe(2_000);
    await lateAdmission();
    clock.advance(2_050);

    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({ allow: false, reason: 'breaker_open' });
    expect(admitted).toHaveLength(2);
  });

  it('drops a kept probe when the breaker leaves half-open', async () => {
    const { decider, dependency, admitted, lateAdmission } = setupLateProbe();
    await lateAdmission();
    // The probe failed elsewhere (or expired) and the breaker reopened, then half-opened again.
    dependency.applyState('open', Date.now() + 1_000);
    dependency.applyState('half_open');

    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({ allow: false, reason: 'breaker_open' });
    expect(admitted).toHaveLength(2);
  });

  it('does not keep a probe whose answer came after the breaker was seen to leave half-open', async () => {
    const { decider, dependency, admitted, lateAdmission } = setupLateProbe();
    await lateAdmission(() => {
      dependency.applyState('open', Date.now() + 1_000);
      dependency.applyState('half_open');
    });

    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({ allow: false, reason: 'breaker_open' });
    expect(admitted).toHaveLength(2);
  });
});

describe("FleetDecider: the call's deadline ends the wait for an answer", () => {
  it('gives an admission up deadline_exceeded when the deadline comes before the answer, and keeps the probe the answer carries', async () => {
    let answer: (decision: AdmitDecision) => void = () => undefined;
    const admitted: number[] = [];
    const { decider, clock, dependency } = deciderFor(
      async () => GRANT,
      () => {
        admitted.push(Date.now());
        return new Promise<AdmitDecision>((resolve) => (answer = resolve));
      },
    );
    dependency.applyState('half_open');
    // 20 ms of deadline left, 200 of decision time: the deadline passes while the admission is under way.
    const admission = decider.admit(dependency, 1, 'half_open', clock.now() + 20);
    clock.advance(20);

    expect(await admission).toEqual({ allow: false, reason: 'deadline_exceeded' });
    answer({
      allow: true,
      reason: 'granted',
      retryAfterMs: 0,
      breaker: { state: 'half_open' },
      probe: { token: 'late-2', expiresAt: Date.now() + 10_000 },
      shadow: false,
    });
    await sleep(5);
    expect(await decider.admit(dependency, 1, 'half_open')).toMatchObject({ allow: true, probe: { token: 'late-2' } });
    expect(admitted).toHaveLength(1);
  });

  it('does not ask for an admission once the deadline has passed', async () => {
    const admitted: number[] = [];
    const { decider, clock, dependency } = deciderFor(
      async () => GRANT,
      () => {
        admitted.push(Date.now());
        return new Promise<AdmitDecision>(() => undefined);
      },
    );
    dependency.applyState('half_open');

    expect(await decider.admit(dependency, 1, 'half_open', clock.now())).toEqual({
      allow: false,
      reason: 'deadline_exceeded',
    });
    expect(admitted).toHaveLength(0);
  });

  it('gives a retry ask up deadline_exceeded, not coordinator_unavailable, when the deadline comes before the answer', async () => {
    const asked: RetryRequest[] = [];
    const { decider, clock, dependency, link } = deciderFor((request) => {
      asked.push(request);
      return new Promise<RetryDecision>(() => undefined);
    });
    const decision = decider.retry(dependency, { attempt: 1, status: 503, deadlineMs: 20 });
    await untilAsked(asked, 1);
    clock.advance(20);

    expect(await decision).toMatchObject({ allow: false, reason: 'deadline_exceeded' });
    expect(link.fallback).toBe(false);
  });
});
