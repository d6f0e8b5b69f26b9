import { TimeoutWatch, type Expiring } from './timeout-watch';

/** An entry due `inMs` from now (real time), which records when it expired. */
function entry(name: string, inMs: number, expired: string[]): Expiring {
  return {
    expiresAt: Date.now() + inMs,
    expire: () => expired.push(`${name}@${Date.now() - start}`),
    watchPrev: undefined,
    watchNext: undefined,
  };
}

let start = 0;

describe('TimeoutWatch', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    start = Date.now();
  });
  afterEach(() => jest.useRealTimers());

  it('expires each entry at its time, in any order of adding, on one timer', () => {
    const expired: string[] = [];
    const watch = new TimeoutWatch();
    watch.add(entry('b', 30, expired));
    watch.add(entry('a', 10, expired));
    watch.add(entry('c', 30, expired));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(9);
    expect(expired).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(expired).toEqual(['a@10']);
    jest.advanceTimersByTime(20);
    expect(expired).toEqual(['a@10', 'b@30', 'c@30']);
    expect(watch.size).toBe(0);
  });

  it('never expires a deleted entry, and holds no reference to it', () => {
    const expired: string[] = [];
    const watch = new TimeoutWatch();
    const first = entry('first', 10, expired);
    const middle = entry('middle', 10, expired);
    const last = entry('last', 10, expired);
    for (const each of [first, middle, last]) watch.add(each);
    watch.delete(middle);
    watch.delete(middle);
    // Unlinked at once: nothing on the list reaches it, so it can be collected before the timer fires.
    expect(watch.size).toBe(2);
    expect(middle.watchPrev).toBeUndefined();
    expect(middle.watchNext).toBeUndefined();
    expect(first.watchNext).toBe(last);
    expect(last.watchPrev).toBe(first);
    jest.advanceTimersByTime(10);
    expect(expired).toEqual(['first@10', 'last@10']);
  });

  it('watches an entry added again at its new expiry, once', () => {
    const expired: string[] = [];
    const watch = new TimeoutWatch();
    const renewed = entry('renewed', 10, expired);
    watch.add(renewed);
    renewed.expiresAt = Date.now() + 25;
    watch.add(renewed);
    expect(watch.size).toBe(1);
    jest.advanceTimersByTime(24);
    expect(expired).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(expired).toEqual(['renewed@25']);
  });

  it('lets an expiring entry be added again from its own expire()', () => {
    const expired: string[] = [];
    const watch = new TimeoutWatch();
    let renewals = 0;
    const renewing: Expiring = {
      expiresAt: Date.now() + 10,
      expire: () => {
        expired.push(`renewing@${Date.now() - start}`);
        if (++renewals < 3) {
          renewing.expiresAt = Date.now() + 10;
          watch.add(renewing);
        }
      },
      watchPrev: undefined,
      watchNext: undefined,
    };
    watch.add(renewing);
    jest.advanceTimersByTime(100);
    expect(expired).toEqual(['renewing@10', 'renewing@20', 'renewing@30']);
    expect(watch.size).toBe(0);
  });

  it('keeps every watched entry, in order, across the replacements of its head', () => {
    const expired: string[] = [];
    const watch = new TimeoutWatch();
    const early = entry('early', 30, expired);
    watch.add(early);
    // 3,000 short-lived entries: the head is replaced with the list empty and with entries on it.
    const kept: Expiring[] = [];
    for (let i = 0; i < 3000; i++) {
      const each = entry(`e${i}`, 20, expired);
      watch.add(each);
      if (i % 1000 === 999) kept.push(each);
      else watch.delete(each);
    }
    const late = entry('late', 40, expired);
    watch.add(late);
    expect(watch.size).toBe(5);
    watch.delete(kept[1]);
    jest.advanceTimersByTime(40);
    expect(expired).toEqual(['e999@20', 'e2999@20', 'early@30', 'late@40']);
    expect(watch.size).toBe(0);
  });
});
