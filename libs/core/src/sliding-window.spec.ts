import { seededRandom } from './random';
import { ManualClock } from './clock';
import { SlidingWindowCounter, epochSecond } from './sliding-window';

const FIELDS = ['requests', 'retries'] as const;
type Field = (typeof FIELDS)[number];

function counter(): SlidingWindowCounter<Field> {
  return new SlidingWindowCounter<Field>(FIELDS);
}

/** The reference: every bucket kept, totals recomputed from scratch on each read. */
class NaiveWindow {
  private readonly buckets = new Map<number, Record<Field, number>>();

  add(second: number, windowSeconds: number, delta: Partial<Record<Field, number>>): void {
    this.prune(second, windowSeconds);
    const bucket = this.buckets.get(second) ?? { requests: 0, retries: 0 };
    bucket.requests += delta.requests ?? 0;
    bucket.retries += delta.retries ?? 0;
    this.buckets.set(second, bucket);
  }

  sum(second: number, windowSeconds: number): Record<Field, number> {
    this.prune(second, windowSeconds);
    const total = { requests: 0, retries: 0 };
    for (const [bucketSecond, bucket] of this.buckets) {
      if (bucketSecond < second - windowSeconds + 1) continue;
      total.requests += bucket.requests;
      total.retries += bucket.retries;
    }
    return total;
  }

  private prune(second: number, windowSeconds: number): void {
    for (const bucketSecond of [...this.buckets.keys()]) {
      if (bucketSecond < second - windowSeconds + 1) this.buckets.delete(bucketSecond);
    }
  }
}

describe('SlidingWindowCounter', () => {
  it('starts empty with zero totals for every field', () => {
    const c = counter();
    expect(c.isEmpty()).toBe(true);
    expect(c.sum(1000, 10)).toEqual({ requests: 0, retries: 0 });
  });

  it('adds within one second, per field, treating missing fields as zero', () => {
    const c = counter();
    c.add(100, 10, { requests: 1 });
    c.add(100, 10, { requests: 2, retries: 1 });
    c.add(100, 10, { retries: 4 });
    c.add(100, 10, {});
    expect(c.sum(100, 10)).toEqual({ requests: 3, retries: 5 });
    expect(c.isEmpty()).toBe(false);
  });

  it('adds across seconds inside the window', () => {
    const c = counter();
    c.add(100, 10, { requests: 1 });
    c.add(101, 10, { requests: 10 });
    c.add(105, 10, { requests: 100, retries: 1 });
    expect(c.sum(105, 10)).toEqual({ requests: 111, retries: 1 });
  });

  it('ignores fields that are not its own', () => {
    const c = new SlidingWindowCounter<'a'>(['a']);
    c.add(1, 10, { a: 2, b: 5 } as Partial<Record<'a', number>>);
    expect(c.sum(1, 10)).toEqual({ a: 2 });
  });

  describe('window boundaries: the window at s covers s - window + 1 … s', () => {
    it('a bucket at s - window + 1 is still counted', () => {
      const c = counter();
      c.add(100, 10, { requests: 7 });
      expect(c.sum(109, 10)).toEqual({ requests: 7, retries: 0 });
    });

    it('a bucket at s - window has aged out', () => {
      const c = counter();
      c.add(100, 10, { requests: 7 });
      expect(c.sum(110, 10)).toEqual({ requests: 0, retries: 0 });
    });

    it('a one-second window holds only the current second', () => {
      const c = counter();
      c.add(50, 1, { retries: 3 });
      expect(c.sum(50, 1)).toEqual({ requests: 0, retries: 3 });
      c.add(51, 1, { retries: 1 });
      expect(c.sum(51, 1)).toEqual({ requests: 0, retries: 1 });
      expect(c.sum(52, 1)).toEqual({ requests: 0, retries: 0 });
    });

    it('ages buckets out one by one as the window slides', () => {
      const c = counter();
      for (let s = 100; s < 110; s++) c.add(s, 10, { requests: s - 99 }); // 1 … 10
      const sums: number[] = [];
      for (let s = 109; s <= 120; s++) sums.push(c.sum(s, 10).requests);
      // at 109 all of 1..10 = 55; each later second drops the oldest bucket
      expect(sums).toEqual([55, 54, 52, 49, 45, 40, 34, 27, 19, 10, 0, 0]);
    });

    it('an add ages out old buckets before counting the new one', () => {
      const c = counter();
      c.add(100, 10, { requests: 1 });
      c.add(110, 10, { requests: 2 });
      expect(c.sum(110, 10)).toEqual({ requests: 2, retries: 0 });
      c.add(119, 10, { requests: 4 });
      expect(c.sum(119, 10)).toEqual({ requests: 6, retries: 0 });
      c.add(120, 10, { requests: 8 });
      expect(c.sum(120, 10)).toEqual({ requests: 12, retries: 0 });
    });

    it('after a partial prune, the remaining oldest bucket still ages out later', () => {
      const c = counter();
      c.add(100, 10, { requests: 1 });
      c.add(103, 10, { requests: 10 });
      c.add(106, 10, { requests: 100 });
      expect(c.sum(110, 10).requests).toBe(110);
      expect(c.sum(113, 10).requests).toBe(100);
      expect(c.sum(115, 10).requests).toBe(100);
      expect(c.sum(116, 10).requests).toBe(0);
      expect(c.isEmpty()).toBe(true);
    });

    it('drops the buckets ahead of an earlier second (a clock step back), and ages the rest out on time', () => {
      const c = counter();
      c.add(105, 10, { requests: 1 });
      c.add(103, 10, { requests: 10 });
      expect(c.sum(105, 10).requests).toBe(10);
      expect(c.sum(112, 10).requests).toBe(10);
      expect(c.sum(113, 10).requests).toBe(0);
      expect(c.isEmpty()).toBe(true);
    });
  });

  it('is zero and empty after a long gap, and starts fresh afterwards', () => {
    const c = counter();
    for (let s = 0; s < 10; s++) c.add(1_000 + s, 10, { requests: 5, retries: 1 });
    expect(c.sum(1_009, 10)).toEqual({ requests: 50, retries: 10 });
    expect(c.sum(1_000_000, 10)).toEqual({ requests: 0, retries: 0 });
    expect(c.isEmpty()).toBe(true);
    c.add(1_000_001, 10, { retries: 2 });
    expect(c.sum(1_000_001, 10)).toEqual({ requests: 0, retries: 2 });
    expect(c.isEmpty()).toBe(false);
  });

  it('an add after a long gap does not carry old totals', () => {
    const c = counter();
    c.add(100, 10, { requests: 9 });
    c.add(5_000, 10, { requests: 1 });
    expect(c.sum(5_000, 10)).toEqual({ requests: 1, retries: 0 });
  });

  it('clear() drops every bucket and total', () => {
    const c = counter();
    c.add(100, 10, { requests: 3, retries: 2 });
    c.add(101, 10, { requests: 4 });
    c.clear();
    expect(c.isEmpty()).toBe(true);
    expect(c.sum(101, 10)).toEqual({ requests: 0, retries: 0 });
    c.add(101, 10, { requests: 1 });
    expect(c.sum(101, 10)).toEqual({ requests: 1, retries: 0 });
  });

  it('after clear(), new buckets age out normally', () => {
    const c = counter();
    c.add(100, 10, { requests: 3 });
    c.clear();
    c.add(200, 10, { requests: 5 });
    c.add(205, 10, { requests: 7 });
    expect(c.sum(209, 10).requests).toBe(12);
    expect(c.sum(210, 10).requests).toBe(7);
    expect(c.sum(215, 10).requests).toBe(0);
    expect(c.isEmpty()).toBe(true);
  });

  it('a window that shrinks between calls prunes accordingly', () => {
    const c = counter();
    for (let s = 100; s < 110; s++) c.add(s, 10, { requests: 1 });
    expect(c.sum(109, 10).requests).toBe(10);
    expect(c.sum(109, 5).requests).toBe(5); // 105 … 109
    expect(c.sum(109, 5).requests).toBe(5);
    expect(c.sum(109, 1).requests).toBe(1);
    c.add(110, 1, { requests: 2 });
    expect(c.sum(110, 1).requests).toBe(2);
  });

  it('a shrinking window on add prunes before adding', () => {
    const c = counter();
    for (let s = 100; s < 110; s++) c.add(s, 10, { retries: 1 });
    c.add(110, 3, { retries: 100 });
    expect(c.sum(110, 3).retries).toBe(102); // 108, 109, 110
  });

  it('sum() returns a copy: mutating it does not touch the counter', () => {
    const c = counter();
    c.add(1, 10, { requests: 1 });
    const snapshot = c.sum(1, 10);
    snapshot.requests = 999;
    expect(c.sum(1, 10)).toEqual({ requests: 1, retries: 0 });
  });

  it('keeps separate counters independent', () => {
    const a = counter();
    const b = counter();
    a.add(1, 10, { requests: 1 });
    expect(b.sum(1, 10)).toEqual({ requests: 0, retries: 0 });
    expect(b.isEmpty()).toBe(true);
  });

  describe('against a naive recomputation (seeded)', () => {
    it.each([1, 7, 1234, 0xdecaf])('stays exact over thousands of operations with a fixed window (seed %p)', (seed) => {
      const rng = seededRandom(seed);
      const windowSeconds = 1 + Math.floor(rng() * 30);
      const real = counter();
      const naive = new NaiveWindow();
      let second = 1_700_000_000;
      const mismatches: string[] = [];

      for (let i = 0; i < 5_000; i++) {
        const step = rng();
        if (step < 0.5) second += 0;
        else if (step < 0.9) second += 1 + Math.floor(rng() * 3);
        else if (step < 0.98) second += Math.floor(rng() * windowSeconds * 2);
        else second += windowSeconds * (1 + Math.floor(rng() * 5));

        if (rng() < 0.7) {
          const delta: Partial<Record<Field, number>> = {};
          if (rng() < 0.8) delta.requests = Math.floor(rng() * 100);
          if (rng() < 0.4) delta.retries = Math.floor(rng() * 10);
          real.add(second, windowSeconds, delta);
          naive.add(second, windowSeconds, delta);
        } else {
          const got = real.sum(second, windowSeconds);
          const want = naive.sum(second, windowSeconds);
          if (got.requests !== want.requests || got.retries !== want.retries) {
            if (mismatches.length < 10)
              mismatches.push(`op ${i} @${second}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
          }
        }
      }
      expect(mismatches).toEqual([]);

      const far = second + windowSeconds;
      expect(real.sum(far, windowSeconds)).toEqual({ requests: 0, retries: 0 });
      expect(real.isEmpty()).toBe(true);
    });

    it('stays exact when the window shrinks now and then', () => {
      const rng = seededRandom(31337);
      const real = counter();
      const naive = new NaiveWindow();
      let windowSeconds = 60;
      let second = 10_000;
      const mismatches: string[] = [];

      for (let i = 0; i < 5_000; i++) {
        if (rng() < 0.01 && windowSeconds > 1) windowSeconds -= 1 + Math.floor(rng() * Math.min(10, windowSeconds - 1));
        if (rng() < 0.5) second += Math.floor(rng() * 4);
        const delta = { requests: Math.floor(rng() * 20), retries: Math.floor(rng() * 3) };
        real.add(second, windowSeconds, delta);
        naive.add(second, windowSeconds, delta);
        const got = real.sum(second, windowSeconds);
        const want = naive.sum(second, windowSeconds);
        if ((got.requests !== want.requests || got.retries !== want.retries) && mismatches.length < 10) {
          mismatches.push(`op ${i} @${second} w=${windowSeconds}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
        }
      }
      expect(mismatches).toEqual([]);
      expect(windowSeconds).toBeLessThan(60);
    });
  });
});

describe('epochSecond', () => {
  it.each([
    [0, 0],
    [1, 0],
    [999, 0],
    [1_000, 1],
    [1_999, 1],
    [2_000, 2],
    [1_700_000_000_000, 1_700_000_000],
    [1_700_000_000_999, 1_700_000_000],
    [1_700_000_001_000, 1_700_000_001],
  ])('%p ms is in second %p', (ms, second) => {
    expect(epochSecond(ms)).toBe(second);
  });

  it('floors, rather than truncating, before the epoch', () => {
    expect(epochSecond(-1)).toBe(-1);
    expect(epochSecond(-1_000)).toBe(-1);
    expect(epochSecond(-1_001)).toBe(-2);
  });

  it('drives the window from a ManualClock', () => {
    const clock = new ManualClock(1_700_000_000_500);
    const c = counter();
    c.add(epochSecond(clock.now()), 10, { requests: 1 });
    clock.advance(499); // still the same second
    c.add(epochSecond(clock.now()), 10, { requests: 1 });
    clock.advance(1); // next second
    c.add(epochSecond(clock.now()), 10, { requests: 1 });
    expect(c.sum(epochSecond(clock.now()), 10).requests).toBe(3);
    clock.advance(8_999); // 1_700_000_010_000 - 1 → second …009: first bucket still in
    expect(c.sum(epochSecond(clock.now()), 10).requests).toBe(3);
    clock.advance(1); // second …010: the first bucket (…000) ages out
    expect(c.sum(epochSecond(clock.now()), 10).requests).toBe(1);
    clock.set(1_700_000_011_000);
    expect(c.sum(epochSecond(clock.now()), 10).requests).toBe(0);
  });

  it('keeps only the counters that are not zero, and no bucket for a delta of zeros', () => {
    const fields = Array.from({ length: 29 }, (_, i) => `l${i + 1}`);
    const latency = new SlidingWindowCounter(fields);
    latency.add(100, 600, { l4: 7, l1: 0, l2: 0 });
    latency.add(101, 600, Object.fromEntries(fields.map((f) => [f, 0])));
    expect(latency.storedCounters).toBe(1);
    latency.add(102, 600, { l4: 1, l29: 2 });
    expect(latency.storedCounters).toBe(3);
    expect(latency.sum(102, 600)).toMatchObject({ l1: 0, l4: 8, l29: 2 });
    expect(latency.bucketsOf(102, 600)[0][1]).toMatchObject({ l1: 0, l4: 7 });
    expect(latency.sum(701, 600)).toMatchObject({ l4: 1, l29: 2 });
    expect(latency.storedCounters).toBe(2);
  });
});
