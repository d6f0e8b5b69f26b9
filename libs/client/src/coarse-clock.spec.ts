import { CoarseClock } from './coarse-clock';

describe('CoarseClock', () => {
  let systemReads: jest.SpyInstance<number, []>;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    systemReads = jest.spyOn(Date, 'now');
  });
  afterEach(() => {
    systemReads.mockRestore();
    jest.useRealTimers();
  });

  it('reads the system clock once for many readings within a tick, and again after the tick', () => {
    const clock = new CoarseClock();
    const readings = Array.from({ length: 100 }, () => clock.now());
    expect(systemReads).toHaveBeenCalledTimes(1);
    expect(new Set(readings)).toEqual(new Set([1_000_000]));
    jest.advanceTimersByTime(5);
    expect(clock.now()).toBe(1_000_005);
    expect(systemReads).toHaveBeenCalledTimes(2);
  });

  it('reads the system clock again after 128 readings, even when no tick came (a busy event loop)', () => {
    const clock = new CoarseClock();
    for (let i = 0; i < 128; i++) clock.now();
    expect(systemReads).toHaveBeenCalledTimes(1);
    clock.now();
    expect(systemReads).toHaveBeenCalledTimes(2);
  });

  it('stops its ticker after a tick without readings, and starts it again when read', () => {
    const clock = new CoarseClock();
    clock.now();
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(2);
    expect(jest.getTimerCount()).toBe(0);
    clock.now();
    expect(jest.getTimerCount()).toBe(1);
  });
});
