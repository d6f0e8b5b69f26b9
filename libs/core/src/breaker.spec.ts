import type { BreakerPolicy, BreakerState } from '@sluice/protocol';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import {
  BreakerMachine,
  CLOSED_BREAKER,
  blocksCalls,
  openDurationMs,
  windowTrips,
  type BreakerRecord,
  type BreakerWindow,
} from './breaker';
import { ManualClock } from './clock';
import { seededRandom } from './random';

const ALL_STATES: BreakerState[] = ['closed', 'open', 'half_open', 'forced_open', 'forced_closed'];

function policy(overrides: Partial<BreakerPolicy> = {}): BreakerPolicy {
  return { ...DEFAULT_DEPENDENCY_POLICY.breaker, ...overrides };
}

function win(successes: number, failures: number, slow = 0, failingReporters = 1): BreakerWindow {
  return { successes, failures, slow, failingReporters };
}

/** A policy with small numbers, easy to follow in the tests below. */
const P = policy({
  failureRateThreshold: 0.5,
  slowCallRateThreshold: 1.0,
  minimumCalls: 10,
  openMs: 1000,
  maxOpenMs: 10_000,
  closeAfterSuccesses: 3,
  minReporters: 1,
});

/** A window that trips P. */
const TRIPPING = win(0, 10);

function machine(record: Partial<BreakerRecord> = {}): BreakerMachine {
  return new BreakerMachine({ ...CLOSED_BREAKER, ...record });
}

/** A machine in `state`, built through the public transitions (transitions list cleared afterwards). */
function machineIn(state: BreakerState, clock: ManualClock): BreakerMachine {
  const m = machine();
  switch (state) {
    case 'closed':
      break;
    case 'open':
      expect(m.evaluate(P, TRIPPING, clock.now())).toBe(true);
      break;
    case 'half_open':
      m.evaluate(P, TRIPPING, clock.now());
      clock.advance(P.openMs);
      m.settle(clock.now());
      break;
    case 'forced_open':
      m.trip(clock.now(), 'incident');
      break;
    case 'forced_closed':
      m.forceClose(clock.now(), 'maintenance');
      break;
  }
  expect(m.record.state).toBe(state);
  m.transitions.length = 0;
  return m;
}

describe('windowTrips', () => {
  describe('minimumCalls', () => {
    it('does not trip below minimumCalls however bad the window, and trips at it', () => {
      expect(windowTrips(P, win(0, 9, 9, 5))).toBe(false);
      expect(windowTrips(P, win(0, 10, 10, 5))).toBe(true);
    });

    it('counts successes and failures together towards minimumCalls', () => {
      expect(windowTrips(P, win(4, 5))).toBe(false); // 9 calls
      expect(windowTrips(P, win(5, 5))).toBe(true); // 10 calls, 50%
    });

    it('does not count slow calls as extra calls', () => {
      // slow calls are among the successes and failures, not in addition to them
      expect(windowTrips(P, win(0, 9, 9))).toBe(false);
      expect(windowTrips(P, win(9, 0, 9))).toBe(false);
    });

    it('applies the default minimumCalls of 20', () => {
      const defaults = policy();
      expect(windowTrips(defaults, win(0, 19))).toBe(false);
      expect(windowTrips(defaults, win(0, 20))).toBe(true);
      expect(windowTrips(defaults, win(10, 10))).toBe(true);
      expect(windowTrips(defaults, win(11, 9))).toBe(false);
    });

    it('never trips with zero calls, even with minimumCalls 0 and thresholds 0', () => {
      const loose = policy({ minimumCalls: 0, failureRateThreshold: 0, slowCallRateThreshold: 0, minReporters: 0 });
      expect(windowTrips(loose, win(0, 0, 0, 0))).toBe(false);
      expect(windowTrips(loose, win(0, 0, 0, 3))).toBe(false);
      expect(windowTrips(P, win(0, 0, 0, 3))).toBe(false);
    });

    it('trips on a single call when minimumCalls is 1', () => {
      const one = policy({ minimumCalls: 1, failureRateThreshold: 0.5 });
      expect(windowTrips(one, win(0, 1))).toBe(true);
      expect(windowTrips(one, win(1, 0))).toBe(false);
    });
  });

  describe('failure-rate threshold', () => {
    it('trips exactly at the threshold and not just under it', () => {
      expect(windowTrips(P, win(5, 5))).toBe(true); // 50%
      expect(windowTrips(P, win(6, 4))).toBe(false); // 40%
      expect(windowTrips(P, win(51, 49))).toBe(false); // 49%
      expect(windowTrips(P, win(50, 50))).toBe(true);
      expect(windowTrips(P, win(101, 99))).toBe(false); // 49.5%
    });

    it('trips above the threshold', () => {
      expect(windowTrips(P, win(4, 6))).toBe(true);
      expect(windowTrips(P, win(0, 10))).toBe(true);
    });

    it('trips at thresholds that are not binary fractions (0.3 with 3 of 10)', () => {
      // 0.3 × 10 is 3.0000000000000004 in floating point
      const p = policy({ minimumCalls: 10, failureRateThreshold: 0.3 });
      expect(windowTrips(p, win(7, 3))).toBe(true);
      expect(windowTrips(p, win(8, 2))).toBe(false);
    });

    it('trips at 0.7 with 7 of 10, 0.1 with 3 of 30, 0.57 with 57 of 100', () => {
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.7 }), win(3, 7))).toBe(true);
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.7 }), win(4, 6))).toBe(false);
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.1 }), win(27, 3))).toBe(true);
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.1 }), win(28, 2))).toBe(false);
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.57 }), win(43, 57))).toBe(true);
      expect(windowTrips(policy({ minimumCalls: 10, failureRateThreshold: 0.57 }), win(44, 56))).toBe(false);
    });

    it('trips exactly at any percentage threshold and not one failure under it (seeded)', () => {
      const random = seededRandom(42);
      for (let i = 0; i < 2_000; i++) {
        const k = 1 + Math.floor(random() * 100); // threshold k%
        const calls = 1 + Math.floor(random() * 100_000);
        const p = policy({ minimumCalls: 1, failureRateThreshold: k / 100, slowCallRateThreshold: 1 });
        // the fewest failures with failures / calls ≥ k / 100, in integer arithmetic
        const atThreshold = Math.ceil((k * calls) / 100);
        expect([k, calls, windowTrips(p, win(calls - atThreshold, atThreshold))]).toEqual([k, calls, true]);
        if (atThreshold > 0 && atThreshold - 1 < calls) {
          expect([k, calls, windowTrips(p, win(calls - atThreshold + 1, atThreshold - 1))]).toEqual([k, calls, false]);
        }
      }
    });

    it('trips at a failure rate of 1.0 only when every call failed', () => {
      const p = policy({ minimumCalls: 10, failureRateThreshold: 1 });
      expect(windowTrips(p, win(0, 10))).toBe(true);
      expect(windowTrips(p, win(1, 9))).toBe(false);
      expect(windowTrips(p, win(1, 999))).toBe(false);
    });
  });

  describe('slow-call rule', () => {
    it('trips on slow calls at slowCallRateThreshold with no failures', () => {
      const p = policy({ minimumCalls: 10, failureRateThreshold: 0.5, slowCallRateThreshold: 0.3 });
      expect(windowTrips(p, win(10, 0, 3))).toBe(true);
      expect(windowTrips(p, win(10, 0, 2))).toBe(false);
      expect(windowTrips(p, win(100, 0, 30))).toBe(true);
      expect(windowTrips(p, win(100, 0, 29))).toBe(false);
    });

    it('with the default slowCallRateThreshold 1.0, trips only when every call is slow', () => {
      const p = policy({ minimumCalls: 10, failureRateThreshold: 0.5 });
      expect(p.slowCallRateThreshold).toBe(1);
      expect(windowTrips(p, win(10, 0, 10))).toBe(true);
      expect(windowTrips(p, win(10, 0, 9))).toBe(false);
      expect(windowTrips(p, win(1000, 0, 999))).toBe(false);
      expect(windowTrips(p, win(1000, 0, 1000))).toBe(true);
    });

    it('trips when either rule is met, not only when both are', () => {
      const p = policy({ minimumCalls: 10, failureRateThreshold: 0.5, slowCallRateThreshold: 0.5 });
      expect(windowTrips(p, win(6, 4, 5))).toBe(true); // slow only
      expect(windowTrips(p, win(5, 5, 0))).toBe(true); // failures only
      expect(windowTrips(p, win(6, 4, 4))).toBe(false); // neither
    });

    it('does not add slow calls to failures', () => {
      // 3 failures + 3 slow would be 60%, but each rule alone is at 30%
      const p = policy({ minimumCalls: 10, failureRateThreshold: 0.5, slowCallRateThreshold: 0.5 });
      expect(windowTrips(p, win(7, 3, 3))).toBe(false);
    });

    it('still needs minimumCalls for the slow rule', () => {
      const p = policy({ minimumCalls: 10, slowCallRateThreshold: 0.3 });
      expect(windowTrips(p, win(9, 0, 9))).toBe(false);
    });
  });

  describe('quorum rule', () => {
    it('never trips with fewer failing reporters than minReporters, and trips at minReporters', () => {
      const p = policy({ minimumCalls: 10, minReporters: 3 });
      expect(windowTrips(p, win(0, 100, 100, 0))).toBe(false);
      expect(windowTrips(p, win(0, 100, 100, 1))).toBe(false);
      expect(windowTrips(p, win(0, 100, 100, 2))).toBe(false);
      expect(windowTrips(p, win(0, 100, 100, 3))).toBe(true);
      expect(windowTrips(p, win(0, 100, 100, 4))).toBe(true);
    });

    it('applies to the slow-call rule too', () => {
      const p = policy({ minimumCalls: 10, minReporters: 2, slowCallRateThreshold: 0.5 });
      expect(windowTrips(p, win(10, 0, 10, 1))).toBe(false);
      expect(windowTrips(p, win(10, 0, 10, 2))).toBe(true);
    });

    it('does not trip on a quorum alone: the rate must also be met', () => {
      const p = policy({ minimumCalls: 10, minReporters: 2 });
      expect(windowTrips(p, win(6, 4, 0, 50))).toBe(false);
    });

    it('with the default minReporters 1, one failing reporter is enough but none is not', () => {
      const p = policy({ minimumCalls: 10 });
      expect(p.minReporters).toBe(1);
      expect(windowTrips(p, win(0, 10, 0, 1))).toBe(true);
      expect(windowTrips(p, win(0, 10, 0, 0))).toBe(false);
    });
  });
});

describe('openDurationMs', () => {
  it('is openMs for the first open, doubling per reopen up to maxOpenMs', () => {
    const p = policy({ openMs: 30_000, maxOpenMs: 300_000 });
    expect([1, 2, 3, 4, 5, 6, 7].map((opens) => openDurationMs(p, opens))).toEqual([
      30_000, 60_000, 120_000, 240_000, 300_000, 300_000, 300_000,
    ]);
  });

  it('hits maxOpenMs exactly when a doubling lands on it', () => {
    const p = policy({ openMs: 1000, maxOpenMs: 8000 });
    expect([1, 2, 3, 4, 5].map((opens) => openDurationMs(p, opens))).toEqual([1000, 2000, 4000, 8000, 8000]);
  });

  it('is openMs for opens 0 (never below openMs)', () => {
    expect(openDurationMs(policy({ openMs: 1000, maxOpenMs: 8000 }), 0)).toBe(1000);
  });

  it('stays at maxOpenMs, finite, for huge open counts', () => {
    const p = policy({ openMs: 1000, maxOpenMs: 8000 });
    for (const opens of [31, 64, 1_000, 1e6, Number.MAX_SAFE_INTEGER]) {
      expect(openDurationMs(p, opens)).toBe(8000);
    }
    const uncapped = policy({ openMs: 1000, maxOpenMs: Number.MAX_SAFE_INTEGER });
    expect(Number.isFinite(openDurationMs(uncapped, 10_000))).toBe(true);
  });

  it('is the default 30 s for a first open under the default policy', () => {
    expect(openDurationMs(policy(), 1)).toBe(30_000);
  });
});

describe('blocksCalls', () => {
  it.each<[BreakerState, boolean]>([
    ['closed', false],
    ['open', true],
    ['half_open', true],
    ['forced_open', true],
    ['forced_closed', false],
  ])('%s → %s', (state, blocks) => {
    expect(blocksCalls(state)).toBe(blocks);
  });
});

describe('CLOSED_BREAKER', () => {
  it('is a closed breaker that never left closed', () => {
    expect(CLOSED_BREAKER).toEqual({
      state: 'closed',
      since: null,
      openUntil: null,
      opens: 0,
      probeSuccesses: 0,
      reason: null,
    });
  });

  it('is not changed by a machine that starts from it', () => {
    const clock = new ManualClock();
    const m = new BreakerMachine(CLOSED_BREAKER);
    m.evaluate(P, TRIPPING, clock.now());
    m.trip(clock.now(), 'x', 5);
    m.reset(clock.now());
    expect(CLOSED_BREAKER.state).toBe('closed');
    expect(CLOSED_BREAKER.since).toBeNull();
    expect(CLOSED_BREAKER.opens).toBe(0);
  });
});

describe('BreakerMachine', () => {
  let clock: ManualClock;

  beforeEach(() => {
    clock = new ManualClock();
  });

  describe('closed → open (evaluate)', () => {
    it('opens a closed breaker whose window trips, for openMs', () => {
      const m = machine();
      const now = clock.now();
      expect(m.evaluate(P, TRIPPING, now)).toBe(true);
      expect(m.record).toEqual({
        state: 'open',
        since: now,
        openUntil: now + P.openMs,
        opens: 1,
        probeSuccesses: 0,
        reason: null,
      });
      expect(m.transitions).toEqual([{ from: 'closed', to: 'open' }]);
    });

    it('stays closed when the window does not trip', () => {
      const m = machine();
      expect(m.evaluate(P, win(0, 9), clock.now())).toBe(false);
      expect(m.evaluate(P, win(6, 4), clock.now())).toBe(false);
      expect(m.evaluate(P, win(0, 10, 0, 0), clock.now())).toBe(false);
      expect(m.record).toEqual(CLOSED_BREAKER);
      expect(m.transitions).toEqual([]);
    });

    it('opens for openMs even after earlier opens, since closing resets the count', () => {
      const m = machine({ since: clock.now() - 5, opens: 0 });
      m.evaluate(P, TRIPPING, clock.now());
      expect(m.record.opens).toBe(1);
      expect(m.record.openUntil).toBe(clock.now() + P.openMs);
    });

    it.each<BreakerState>(['open', 'half_open', 'forced_open', 'forced_closed'])('does not evaluate in %s', (state) => {
      const m = machineIn(state, clock);
      const before = { ...m.record };
      clock.advance(1);
      expect(m.evaluate(P, win(0, 1000, 1000, 100), clock.now())).toBe(false);
      expect(m.record).toEqual(before);
      expect(m.transitions).toEqual([]);
    });
  });

  describe('open → half_open (settle)', () => {
    it('stays open one millisecond before openUntil', () => {
      const m = machineIn('open', clock);
      const openUntil = m.record.openUntil!;
      clock.set(openUntil - 1);
      m.settle(clock.now());
      expect(m.record.state).toBe('open');
      expect(m.record.openUntil).toBe(openUntil);
      expect(m.transitions).toEqual([]);
    });

    it('half-opens at openUntil, with since = openUntil', () => {
      const m = machineIn('open', clock);
      const openUntil = m.record.openUntil!;
      clock.set(openUntil);
      expect(m.settle(clock.now())).toBe(m);
      expect(m.record).toEqual({
        state: 'half_open',
        since: openUntil,
        openUntil: null,
        opens: 1,
        probeSuccesses: 0,
        reason: null,
      });
      expect(m.transitions).toEqual([{ from: 'open', to: 'half_open' }]);
    });

    it('dates the half-open from openUntil, not from when it is looked at', () => {
      const m = machineIn('open', clock);
      const openUntil = m.record.openUntil!;
      clock.set(openUntil + 12_345);
      m.settle(clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.record.since).toBe(openUntil);
    });

    it('goes no further than half_open however late it is looked at', () => {
      const m = machineIn('open', clock);
      clock.advance(1_000_000_000);
      m.settle(clock.now());
      m.settle(clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.transitions).toEqual([{ from: 'open', to: 'half_open' }]);
    });

    it('keeps the open count through half_open', () => {
      const m = machine({ state: 'open', since: clock.now(), openUntil: clock.now() + 4000, opens: 3 });
      clock.advance(4000);
      m.settle(clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.record.opens).toBe(3);
    });

    it('does nothing to closed or half_open breakers', () => {
      for (const state of ['closed', 'half_open'] as const) {
        const m = machineIn(state, clock);
        const before = { ...m.record };
        clock.advance(10_000_000);
        m.settle(clock.now());
        expect(m.record).toEqual(before);
        expect(m.transitions).toEqual([]);
      }
    });
  });

  describe('half_open → closed (probe successes)', () => {
    it('closes after closeAfterSuccesses consecutive successes, and not before', () => {
      const m = machineIn('half_open', clock);
      const halfOpenSince = m.record.since;

      clock.advance(10);
      m.probeOutcome(P, true, clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.record.probeSuccesses).toBe(1);
      expect(m.record.since).toBe(halfOpenSince);

      clock.advance(10);
      m.probeOutcome(P, true, clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.record.probeSuccesses).toBe(2);
      expect(m.transitions).toEqual([]);

      clock.advance(10);
      m.probeOutcome(P, true, clock.now());
      expect(m.record).toEqual({
        state: 'closed',
        since: clock.now(),
        openUntil: null,
        opens: 0,
        probeSuccesses: 0,
        reason: null,
      });
      expect(m.transitions).toEqual([{ from: 'half_open', to: 'closed' }]);
    });

    it('closes on the first success with closeAfterSuccesses 1', () => {
      const m = machineIn('half_open', clock);
      m.probeOutcome(policy({ ...P, closeAfterSuccesses: 1 }), true, clock.now());
      expect(m.record.state).toBe('closed');
    });

    it('needs the successes to be consecutive: a failure in between starts over', () => {
      const m = machineIn('half_open', clock);
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, false, clock.now());
      expect(m.record.state).toBe('open');
      expect(m.record.probeSuccesses).toBe(0);

      clock.set(m.record.openUntil!);
      m.settle(clock.now());
      expect(m.record.probeSuccesses).toBe(0);
      m.probeOutcome(P, true, clock.now());
      expect(m.record.state).toBe('half_open');
      expect(m.record.probeSuccesses).toBe(1);
    });

    it('resets opens to 0 when it closes, so the next open is for openMs again', () => {
      const m = machine({ state: 'open', since: clock.now(), openUntil: clock.now() + 4000, opens: 3 });
      clock.advance(4000);
      m.settle(clock.now());
      for (let i = 0; i < P.closeAfterSuccesses; i++) m.probeOutcome(P, true, clock.now());
      expect(m.record.state).toBe('closed');
      expect(m.record.opens).toBe(0);

      clock.advance(1);
      expect(m.evaluate(P, TRIPPING, clock.now())).toBe(true);
      expect(m.record.opens).toBe(1);
      expect(m.record.openUntil).toBe(clock.now() + P.openMs);
    });
  });

  describe('half_open → open (probe failure)', () => {
    it('reopens on a probe failure with opens + 1 and a doubled duration', () => {
      const m = machineIn('half_open', clock);
      clock.advance(250);
      const now = clock.now();
      m.probeOutcome(P, false, now);
      expect(m.record).toEqual({
        state: 'open',
        since: now,
        openUntil: now + 2 * P.openMs,
        opens: 2,
        probeSuccesses: 0,
        reason: null,
      });
      expect(m.transitions).toEqual([{ from: 'half_open', to: 'open' }]);
    });

    it('grows the open duration openMs, 2×, 4×, … capped at maxOpenMs through the machine', () => {
      const m = machine();
      const durations: number[] = [];
      const opens: number[] = [];
      m.evaluate(P, TRIPPING, clock.now());
      for (let i = 0; i < 7; i++) {
        durations.push(m.record.openUntil! - m.record.since!);
        opens.push(m.record.opens);
        clock.set(m.record.openUntil!);
        m.settle(clock.now());
        expect(m.record.state).toBe('half_open');
        clock.advance(7);
        m.probeOutcome(P, false, clock.now());
        expect(m.record.state).toBe('open');
        expect(m.record.since).toBe(clock.now());
      }
      expect(durations).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
      expect(opens).toEqual([1, 2, 3, 4, 5, 6, 7]);
      for (let i = 0; i < opens.length; i++) expect(durations[i]).toBe(openDurationMs(P, opens[i]));
    });

    it('clears partial probe successes when it reopens', () => {
      const m = machineIn('half_open', clock);
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, false, clock.now());
      expect(m.record.probeSuccesses).toBe(0);
    });
  });

  describe('probeOutcome outside half_open', () => {
    it.each<BreakerState>(['closed', 'open', 'forced_open', 'forced_closed'])('is ignored in %s', (state) => {
      const m = machineIn(state, clock);
      const before = { ...m.record };
      clock.advance(5);
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, false, clock.now());
      expect(m.record).toEqual(before);
      expect(m.transitions).toEqual([]);
    });
  });

  describe('forced states', () => {
    it('trip without a duration: forced_open with the reason, until reset', () => {
      const m = machine();
      m.trip(clock.now(), 'payments outage');
      expect(m.record).toEqual({
        state: 'forced_open',
        since: clock.now(),
        openUntil: null,
        opens: 0,
        probeSuccesses: 0,
        reason: 'payments outage',
      });
      expect(m.transitions).toEqual([{ from: 'closed', to: 'forced_open' }]);
    });

    it('trip with a duration: forced_open until now + duration', () => {
      const m = machine();
      m.trip(clock.now(), 'drill', 60_000);
      expect(m.record.state).toBe('forced_open');
      expect(m.record.openUntil).toBe(clock.now() + 60_000);
      expect(m.record.reason).toBe('drill');
    });

    it('forceClose: forced_closed with the reason', () => {
      const m = machine();
      m.forceClose(clock.now(), 'false alarm');
      expect(m.record).toEqual({
        state: 'forced_closed',
        since: clock.now(),
        openUntil: null,
        opens: 0,
        probeSuccesses: 0,
        reason: 'false alarm',
      });
      expect(m.transitions).toEqual([{ from: 'closed', to: 'forced_closed' }]);
    });

    it('forceClose with a duration: forced_closed until now + duration', () => {
      const m = machine();
      m.forceClose(clock.now(), 'deploy', 5_000);
      expect(m.record.state).toBe('forced_closed');
      expect(m.record.openUntil).toBe(clock.now() + 5_000);
    });

    it('trips and force-closes from every state', () => {
      for (const state of ALL_STATES) {
        const a = machineIn(state, clock);
        a.trip(clock.now(), 'r');
        expect(a.record.state).toBe('forced_open');
        expect(a.record.opens).toBe(0);
        const b = machineIn(state, clock);
        b.forceClose(clock.now(), 'r');
        expect(b.record.state).toBe('forced_closed');
        expect(b.record.opens).toBe(0);
      }
    });

    it.each(['forced_open', 'forced_closed'] as const)(
      'a %s with a duration lapses to closed at openUntil, reason cleared',
      (state) => {
        const m = machine();
        const start = clock.now();
        if (state === 'forced_open') m.trip(start, 'r', 2_000);
        else m.forceClose(start, 'r', 2_000);

        clock.set(start + 1_999);
        m.settle(clock.now());
        expect(m.record.state).toBe(state);
        expect(m.record.reason).toBe('r');

        clock.set(start + 2_000 + 500);
        m.settle(clock.now());
        expect(m.record).toEqual({
          state: 'closed',
          since: start + 2_000,
          openUntil: null,
          opens: 0,
          probeSuccesses: 0,
          reason: null,
        });
        expect(m.transitions).toEqual([
          { from: 'closed', to: state },
          { from: state, to: 'closed' },
        ]);
      },
    );

    it('a forced_open lapses exactly at openUntil', () => {
      const m = machine();
      m.trip(clock.now(), 'r', 2_000);
      clock.advance(2_000);
      m.settle(clock.now());
      expect(m.record.state).toBe('closed');
      expect(m.record.since).toBe(clock.now());
    });

    it.each(['forced_open', 'forced_closed'] as const)('a %s without a duration never lapses', (state) => {
      const m = machineIn(state, clock);
      for (const step of [1, 1_000, 86_400_000, 365 * 86_400_000]) {
        clock.advance(step);
        m.settle(clock.now());
      }
      expect(m.record.state).toBe(state);
      expect(m.record.openUntil).toBeNull();
      expect(m.transitions).toEqual([]);
    });

    it('a lapsed forced state is automatic again: the window can open it', () => {
      const m = machine();
      m.forceClose(clock.now(), 'r', 1_000);
      expect(m.evaluate(P, TRIPPING, clock.now())).toBe(false);
      clock.advance(1_000);
      m.settle(clock.now());
      expect(m.evaluate(P, TRIPPING, clock.now())).toBe(true);
      expect(m.record.state).toBe('open');
      expect(m.record.opens).toBe(1);
    });

    it('a second trip records no transition but updates reason, since and openUntil', () => {
      const m = machine();
      const first = clock.now();
      m.trip(first, 'first', 1_000);
      clock.advance(300);
      const second = clock.now();
      m.trip(second, 'second');
      expect(m.record).toEqual({
        state: 'forced_open',
        since: second,
        openUntil: null,
        opens: 0,
        probeSuccesses: 0,
        reason: 'second',
      });
      expect(m.transitions).toEqual([{ from: 'closed', to: 'forced_open' }]);

      // the first trip's expiry no longer applies
      clock.set(first + 1_000);
      m.settle(clock.now());
      expect(m.record.state).toBe('forced_open');
    });

    it('a second forceClose with a duration replaces an open-ended one', () => {
      const m = machine();
      m.forceClose(clock.now(), 'a');
      clock.advance(100);
      m.forceClose(clock.now(), 'b', 400);
      expect(m.record.openUntil).toBe(clock.now() + 400);
      expect(m.record.reason).toBe('b');
      expect(m.transitions).toEqual([{ from: 'closed', to: 'forced_closed' }]);
      clock.advance(400);
      m.settle(clock.now());
      expect(m.record.state).toBe('closed');
    });

    it('forced_open → forced_closed is a transition', () => {
      const m = machine();
      m.trip(clock.now(), 'a');
      m.forceClose(clock.now(), 'b');
      expect(m.transitions).toEqual([
        { from: 'closed', to: 'forced_open' },
        { from: 'forced_open', to: 'forced_closed' },
      ]);
    });
  });

  describe('reset', () => {
    it.each<BreakerState>(['open', 'half_open', 'forced_open', 'forced_closed'])(
      'from %s → closed with opens 0',
      (state) => {
        const m = machineIn(state, clock);
        clock.advance(42);
        m.reset(clock.now());
        expect(m.record).toEqual({
          state: 'closed',
          since: clock.now(),
          openUntil: null,
          opens: 0,
          probeSuccesses: 0,
          reason: null,
        });
        expect(m.transitions).toEqual([{ from: state, to: 'closed' }]);
      },
    );

    it('from closed stays closed and records no transition', () => {
      const m = machine();
      m.reset(clock.now());
      expect(m.record.state).toBe('closed');
      expect(m.record.opens).toBe(0);
      expect(m.transitions).toEqual([]);
    });

    it('after several reopens, the next open is for openMs again', () => {
      const m = machine({ state: 'open', since: clock.now(), openUntil: clock.now() + 8_000, opens: 4 });
      m.reset(clock.now());
      expect(m.record.opens).toBe(0);
      m.evaluate(P, TRIPPING, clock.now());
      expect(m.record.openUntil).toBe(clock.now() + P.openMs);
    });

    it('from half_open clears probe successes', () => {
      const m = machineIn('half_open', clock);
      m.probeOutcome(P, true, clock.now());
      m.reset(clock.now());
      expect(m.record.probeSuccesses).toBe(0);
    });
  });

  describe('transitions list', () => {
    it('records each change in order through a full cycle on one machine', () => {
      const m = machine();
      m.evaluate(P, TRIPPING, clock.now());
      clock.advance(P.openMs);
      m.settle(clock.now());
      m.probeOutcome(P, false, clock.now());
      clock.advance(2 * P.openMs);
      m.settle(clock.now());
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, true, clock.now());
      m.probeOutcome(P, true, clock.now());
      m.trip(clock.now(), 'ops');
      m.trip(clock.now(), 'ops again');
      m.reset(clock.now());
      m.forceClose(clock.now(), 'quiet', 100);
      clock.advance(100);
      m.settle(clock.now());
      expect(m.transitions).toEqual([
        { from: 'closed', to: 'open' },
        { from: 'open', to: 'half_open' },
        { from: 'half_open', to: 'open' },
        { from: 'open', to: 'half_open' },
        { from: 'half_open', to: 'closed' },
        { from: 'closed', to: 'forced_open' },
        { from: 'forced_open', to: 'closed' },
        { from: 'closed', to: 'forced_closed' },
        { from: 'forced_closed', to: 'closed' },
      ]);
    });

    it('records settle and probeOutcome together: open → half_open → closed', () => {
      const m = machine({ state: 'open', since: clock.now(), openUntil: clock.now() + 500, opens: 1 });
      clock.advance(499);
      m.settle(clock.now());
      m.probeOutcome(P, true, clock.now()); // ignored: still open
      clock.advance(1);
      m.settle(clock.now());
      for (let i = 0; i < P.closeAfterSuccesses; i++) m.probeOutcome(P, true, clock.now());
      expect(m.transitions).toEqual([
        { from: 'open', to: 'half_open' },
        { from: 'half_open', to: 'closed' },
      ]);
      expect(m.record.state).toBe('closed');
    });

    it('is empty for a machine that only looked', () => {
      const m = machine();
      m.settle(clock.now());
      m.evaluate(P, win(10, 0), clock.now());
      m.probeOutcome(P, false, clock.now());
      expect(m.transitions).toEqual([]);
    });
  });

  describe('blocksCalls over the machine', () => {
    it('blocks while open and half_open, and lets calls through once closed', () => {
      const m = machine();
      expect(blocksCalls(m.record.state)).toBe(false);
      m.evaluate(P, TRIPPING, clock.now());
      expect(blocksCalls(m.record.state)).toBe(true);
      clock.advance(P.openMs);
      m.settle(clock.now());
      expect(blocksCalls(m.record.state)).toBe(true);
      for (let i = 0; i < P.closeAfterSuccesses; i++) m.probeOutcome(P, true, clock.now());
      expect(blocksCalls(m.record.state)).toBe(false);
    });
  });
});
