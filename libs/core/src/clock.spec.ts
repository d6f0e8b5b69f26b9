import { ManualClock, systemClock } from './clock';

describe('ManualClock', () => {
  it('starts at the given instant and does not move on its own', () => {
    const clock = new ManualClock(5_000);
    expect(clock.now()).toBe(5_000);
    expect(clock.now()).toBe(5_000);
  });

  it('has a fixed, realistic default start', () => {
    expect(new ManualClock().now()).toBe(1_700_000_000_000);
    expect(new ManualClock().now()).toBe(new ManualClock().now());
  });

  it('advance() adds to the current instant, cumulatively', () => {
    const clock = new ManualClock(1_000);
    clock.advance(250);
    expect(clock.now()).toBe(1_250);
    clock.advance(750);
    expect(clock.now()).toBe(2_000);
    clock.advance(0);
    expect(clock.now()).toBe(2_000);
  });

  it('advance() accepts negative steps', () => {
    const clock = new ManualClock(1_000);
    clock.advance(-400);
    expect(clock.now()).toBe(600);
  });

  it('set() replaces the instant, forwards or backwards, and advance() continues from it', () => {
    const clock = new ManualClock(1_000);
    clock.advance(500);
    clock.set(10_000);
    expect(clock.now()).toBe(10_000);
    clock.set(3_000);
    expect(clock.now()).toBe(3_000);
    clock.advance(7);
    expect(clock.now()).toBe(3_007);
  });

  it('instances are independent', () => {
    const a = new ManualClock(0);
    const b = new ManualClock(0);
    a.advance(100);
    expect(a.now()).toBe(100);
    expect(b.now()).toBe(0);
  });
});

describe('systemClock', () => {
  it('reads Date.now()', () => {
    const spy = jest.spyOn(Date, 'now').mockReturnValue(123_456_789);
    try {
      expect(systemClock.now()).toBe(123_456_789);
    } finally {
      spy.mockRestore();
    }
  });
});
