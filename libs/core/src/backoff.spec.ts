import { seededRandom } from './random';
import type { BackoffPolicy, JitterKind } from '@sluice/protocol';
import { backoffDelay, type BackoffInput } from './backoff';
import type { RandomSource } from './random';

const constant =
  (value: number): RandomSource =>
  () =>
    value;

const ALMOST_ONE = 0.9999999999;

function policy(jitter: JitterKind, baseMs = 50, capMs = 2000): BackoffPolicy {
  return { baseMs, capMs, jitter };
}

/** min(cap, base × 2^(attempt-1)), computed without ever forming a huge power. */
function expectedExponential(baseMs: number, capMs: number, attempt: number): number {
  let value = baseMs;
  for (let i = 1; i < attempt && value < capMs; i++) value *= 2;
  return Math.min(capMs, value);
}

const HUGE_ATTEMPTS = [31, 32, 64, 1_000, 1_025, 1e6, 2 ** 31, Number.MAX_SAFE_INTEGER, 1e300, Number.MAX_VALUE];

describe('backoffDelay', () => {
  describe("jitter 'none'", () => {
    it('doubles from baseMs and stops at capMs', () => {
      const delays = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => backoffDelay(policy('none'), { attempt }));
      expect(delays).toEqual([50, 100, 200, 400, 800, 1600, 2000, 2000, 2000]);
    });

    it('caps exactly at capMs when a doubling lands above it', () => {
      expect(backoffDelay(policy('none', 300, 1000), { attempt: 2 })).toBe(600);
      expect(backoffDelay(policy('none', 300, 1000), { attempt: 3 })).toBe(1000);
    });

    it('hits capMs exactly when a doubling lands on it', () => {
      expect(backoffDelay(policy('none', 250, 1000), { attempt: 3 })).toBe(1000);
      expect(backoffDelay(policy('none', 250, 1000), { attempt: 4 })).toBe(1000);
    });

    it('does not depend on the random source', () => {
      for (const attempt of [1, 3, 10]) {
        const low = backoffDelay(policy('none'), { attempt }, constant(0));
        const high = backoffDelay(policy('none'), { attempt }, constant(ALMOST_ONE));
        expect(low).toBe(high);
        expect(low).toBe(expectedExponential(50, 2000, attempt));
      }
    });

    it('follows a different base and cap', () => {
      const delays = [1, 2, 3, 4, 5, 6, 7].map((attempt) => backoffDelay(policy('none', 1000, 60000), { attempt }));
      expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000]);
    });
  });

  describe("jitter 'full'", () => {
    it('is random() × the exponential delay', () => {
      // attempt 4: 50 × 2³ = 400
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(0))).toBe(0);
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(0.25))).toBe(100);
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(0.5))).toBe(200);
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(0.75))).toBe(300);
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(ALMOST_ONE))).toBe(400);
    });

    it('scales with the attempt', () => {
      const half = [1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(policy('full'), { attempt }, constant(0.5)));
      expect(half).toEqual([25, 50, 100, 200, 400, 800]);
    });

    it('jitters within the cap, not within the uncapped exponential', () => {
      // attempt 10: 50 × 2⁹ = 25600, capped at 2000
      expect(backoffDelay(policy('full'), { attempt: 10 }, constant(0.5))).toBe(1000);
      expect(backoffDelay(policy('full'), { attempt: 10 }, constant(ALMOST_ONE))).toBe(2000);
      expect(backoffDelay(policy('full'), { attempt: 10 }, constant(0))).toBe(0);
    });

    it('returns whole milliseconds', () => {
      // 0.3 × 50 = 15; 0.123 × 100 = 12.3 → 12
      expect(backoffDelay(policy('full'), { attempt: 1 }, constant(0.3))).toBe(15);
      expect(backoffDelay(policy('full'), { attempt: 2 }, constant(0.123))).toBe(12);
    });

    it('stays in [0, min(cap, exponential)] for many random draws', () => {
      const random = seededRandom(42);
      for (let i = 0; i < 2000; i++) {
        const attempt = 1 + (i % 12);
        const delay = backoffDelay(policy('full'), { attempt }, random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(expectedExponential(50, 2000, attempt));
      }
    });

    it('actually spreads: draws are not all the same', () => {
      const random = seededRandom(7);
      const seen = new Set<number>();
      for (let i = 0; i < 200; i++) seen.add(backoffDelay(policy('full'), { attempt: 8 }, random));
      expect(seen.size).toBeGreaterThan(50);
    });
  });

  describe("jitter 'decorrelated'", () => {
    it('is uniform in [base, previous × 3] when previousDelayMs is given', () => {
      const p = policy('decorrelated');
      // previous 100 → [50, 300]
      expect(backoffDelay(p, { attempt: 2, previousDelayMs: 100 }, constant(0))).toBe(50);
      expect(backoffDelay(p, { attempt: 2, previousDelayMs: 100 }, constant(0.5))).toBe(175);
      expect(backoffDelay(p, { attempt: 2, previousDelayMs: 100 }, constant(ALMOST_ONE))).toBe(300);
    });

    it('uses previousDelayMs rather than the attempt when given', () => {
      const p = policy('decorrelated');
      const a = backoffDelay(p, { attempt: 2, previousDelayMs: 100 }, constant(0.5));
      const b = backoffDelay(p, { attempt: 2, previousDelayMs: 200 }, constant(0.5));
      const c = backoffDelay(p, { attempt: 9, previousDelayMs: 100 }, constant(0.5));
      expect(a).toBe(175); // 50 + 0.5 × (300 - 50)
      expect(b).toBe(325); // 50 + 0.5 × (600 - 50)
      expect(c).toBe(a);
    });

    it('caps at capMs', () => {
      const p = policy('decorrelated');
      // previous 1000 → [50, 3000], capped at 2000
      expect(backoffDelay(p, { attempt: 3, previousDelayMs: 1000 }, constant(ALMOST_ONE))).toBe(2000);
      expect(backoffDelay(p, { attempt: 3, previousDelayMs: 1000 }, constant(0.9))).toBe(2000);
      expect(backoffDelay(p, { attempt: 3, previousDelayMs: 1000 }, constant(0.5))).toBe(1525);
    });

    it('never goes below baseMs, even for a tiny or zero previous delay', () => {
      const p = policy('decorrelated');
      for (const previousDelayMs of [0, 1, 10, 16]) {
        for (const r of [0, 0.5, ALMOST_ONE]) {
          expect(backoffDelay(p, { attempt: 2, previousDelayMs }, constant(r))).toBe(50);
        }
      }
    });

    it('without a previous delay, starts from [base, 3 × base] and widens by 3 per attempt', () => {
      const p = policy('decorrelated', 10, 100_000);
      const top = [1, 2, 3, 4, 5].map((attempt) => backoffDelay(p, { attempt }, constant(ALMOST_ONE)));
      expect(top).toEqual([30, 30, 90, 270, 810]);
      const bottom = [1, 2, 3, 4, 5].map((attempt) => backoffDelay(p, { attempt }, constant(0)));
      expect(bottom).toEqual([10, 10, 10, 10, 10]);
    });

    it('without a previous delay, stays in [base, cap]', () => {
      const random = seededRandom(99);
      for (let i = 0; i < 2000; i++) {
        const delay = backoffDelay(policy('decorrelated'), { attempt: 1 + (i % 15) }, random);
        expect(delay).toBeGreaterThanOrEqual(50);
        expect(delay).toBeLessThanOrEqual(2000);
      }
    });

    it('chained through its own output, stays in [base, min(cap, previous × 3)]', () => {
      const random = seededRandom(2024);
      const p = policy('decorrelated');
      let previous = p.baseMs;
      for (let attempt = 1; attempt <= 500; attempt++) {
        const delay = backoffDelay(p, { attempt, previousDelayMs: previous }, random);
        expect(delay).toBeGreaterThanOrEqual(p.baseMs);
        expect(delay).toBeLessThanOrEqual(Math.min(p.capMs, previous * 3));
        previous = delay;
      }
    });
  });

  describe('huge attempt numbers', () => {
    it.each(HUGE_ATTEMPTS)('attempt %p gives a finite delay at the cap for none', (attempt) => {
      const delay = backoffDelay(policy('none'), { attempt });
      expect(Number.isFinite(delay)).toBe(true);
      expect(delay).toBe(2000);
    });

    it.each(HUGE_ATTEMPTS)('attempt %p gives a finite, bounded delay for full', (attempt) => {
      for (const r of [0, 0.5, ALMOST_ONE]) {
        const delay = backoffDelay(policy('full'), { attempt }, constant(r));
        expect(Number.isFinite(delay)).toBe(true);
        expect(delay).toBe(Math.round(r * 2000));
      }
    });

    it.each(HUGE_ATTEMPTS)('attempt %p gives a finite, bounded delay for decorrelated', (attempt) => {
      for (const r of [0, 0.5, ALMOST_ONE]) {
        const delay = backoffDelay(policy('decorrelated'), { attempt }, constant(r));
        expect(Number.isFinite(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(50);
        expect(delay).toBeLessThanOrEqual(2000);
      }
      expect(backoffDelay(policy('decorrelated'), { attempt }, constant(0))).toBe(50);
      expect(backoffDelay(policy('decorrelated'), { attempt }, constant(ALMOST_ONE))).toBe(2000);
    });

    it('stays finite with a very large cap', () => {
      for (const jitter of ['none', 'full', 'decorrelated'] as const) {
        for (const attempt of [100, 1e6, Number.MAX_SAFE_INTEGER]) {
          const delay = backoffDelay(policy(jitter, 1000, Number.MAX_SAFE_INTEGER), { attempt }, constant(0.5));
          expect(Number.isFinite(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
        }
      }
    });
  });

  describe('retryAfterMs', () => {
    it.each(['none', 'full', 'decorrelated'] as const)('is never undercut (%p)', (jitter) => {
      for (const r of [0, 0.5, ALMOST_ONE]) {
        expect(backoffDelay(policy(jitter), { attempt: 1, retryAfterMs: 1500 }, constant(r))).toBe(1500);
      }
    });

    it.each(['none', 'full', 'decorrelated'] as const)('is honoured above capMs (%p)', (jitter) => {
      for (const attempt of [1, 5, 50]) {
        expect(backoffDelay(policy(jitter), { attempt, retryAfterMs: 30_000 }, constant(ALMOST_ONE))).toBe(30_000);
      }
    });

    it('is rounded up to a whole millisecond, never down', () => {
      expect(backoffDelay(policy('full'), { attempt: 1, retryAfterMs: 120.2 }, constant(0))).toBe(121);
      expect(backoffDelay(policy('full'), { attempt: 1, retryAfterMs: 120.9 }, constant(0))).toBe(121);
      expect(backoffDelay(policy('full'), { attempt: 1, retryAfterMs: 0.001 }, constant(0))).toBe(1);
      expect(backoffDelay(policy('none'), { attempt: 1, retryAfterMs: 2500.4 })).toBe(2501);
      expect(backoffDelay(policy('none'), { attempt: 1, retryAfterMs: 2500 })).toBe(2500);
    });

    it('does not raise a delay that is already longer', () => {
      expect(backoffDelay(policy('none'), { attempt: 5, retryAfterMs: 100 })).toBe(800);
      expect(backoffDelay(policy('full'), { attempt: 4 }, constant(0.5))).toBe(200);
      expect(backoffDelay(policy('full'), { attempt: 4, retryAfterMs: 199 }, constant(0.5))).toBe(200);
      expect(backoffDelay(policy('full'), { attempt: 4, retryAfterMs: 201 }, constant(0.5))).toBe(201);
    });

    it('zero changes nothing', () => {
      expect(backoffDelay(policy('full'), { attempt: 4, retryAfterMs: 0 }, constant(0))).toBe(0);
      expect(backoffDelay(policy('none'), { attempt: 4, retryAfterMs: 0 })).toBe(400);
    });
  });

  describe('attempt below 1', () => {
    it.each([0, -1, -100, 0.5, Number.MIN_VALUE])('attempt %p is treated as attempt 1', (attempt) => {
      expect(backoffDelay(policy('none'), { attempt })).toBe(50);
      expect(backoffDelay(policy('full'), { attempt }, constant(0.5))).toBe(25);
      expect(backoffDelay(policy('full'), { attempt }, constant(ALMOST_ONE))).toBe(50);
      expect(backoffDelay(policy('decorrelated'), { attempt }, constant(ALMOST_ONE))).toBe(
        backoffDelay(policy('decorrelated'), { attempt: 1 }, constant(ALMOST_ONE)),
      );
    });

    it('never yields a delay below zero or a fraction of base', () => {
      const delay = backoffDelay(policy('none', 64, 10_000), { attempt: -10 });
      expect(delay).toBe(64);
    });
  });

  describe('properties over random policies (seeded)', () => {
    const JITTERS: JitterKind[] = ['none', 'full', 'decorrelated'];

    it('stays within the documented bounds for every jitter, attempt and Retry-After', () => {
      const rng = seededRandom(0x5eed);
      const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
      const failures: string[] = [];

      for (let i = 0; i < 20_000; i++) {
        const baseMs = int(1, 2000);
        const capMs = baseMs * int(1, 1 << 16);
        const jitter = JITTERS[i % JITTERS.length];
        const attempt = rng() < 0.05 ? int(101, 1e9) : int(1, 100);
        const input: BackoffInput = { attempt };
        if (jitter === 'decorrelated' && rng() < 0.5) input.previousDelayMs = int(0, capMs * 2);
        const withRetryAfter = rng() < 0.3;
        const retryAfterMs = withRetryAfter ? rng() * capMs * 3 : undefined;

        const r = rng();
        const p = { baseMs, capMs, jitter };
        const plain = backoffDelay(p, input, constant(r));
        const honoured = backoffDelay(p, { ...input, retryAfterMs }, constant(r));

        const exponential = expectedExponential(baseMs, capMs, attempt);
        const context = `${JSON.stringify(p)} ${JSON.stringify(input)} r=${r} retryAfterMs=${retryAfterMs}`;
        const check = (ok: boolean, what: string) => {
          if (!ok && failures.length < 20) failures.push(`${what}: ${context} → ${plain} / ${honoured}`);
        };

        check(Number.isInteger(plain) && Number.isInteger(honoured), 'not a whole number');
        check(plain >= 0 && plain <= capMs, 'outside [0, cap]');
        if (jitter === 'none') check(plain === exponential, 'none ≠ min(cap, base × 2^(attempt-1))');
        if (jitter === 'full') check(plain === Math.round(r * exponential), 'full ≠ random × exponential');
        if (jitter === 'decorrelated') {
          check(plain >= baseMs, 'decorrelated below base');
          if (input.previousDelayMs !== undefined) {
            check(
              plain <= Math.max(baseMs, Math.min(capMs, input.previousDelayMs * 3)),
              'decorrelated above 3 × previous',
            );
          }
        }
        const expectedHonoured = retryAfterMs === undefined ? plain : Math.max(plain, Math.ceil(retryAfterMs));
        check(honoured === expectedHonoured, 'Retry-After not applied as max(delay, ceil(retryAfterMs))');
        if (retryAfterMs !== undefined) check(honoured >= retryAfterMs, 'Retry-After undercut');
      }

      expect(failures).toEqual([]);
    });

    it('is deterministic for a given random source', () => {
      for (const jitter of JITTERS) {
        const a = seededRandom(1);
        const b = seededRandom(1);
        for (let attempt = 1; attempt <= 50; attempt++) {
          expect(backoffDelay(policy(jitter), { attempt }, a)).toBe(backoffDelay(policy(jitter), { attempt }, b));
        }
      }
    });
  });
});
