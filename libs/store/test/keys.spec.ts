import { SluiceKeys } from '../src';

describe('SluiceKeys', () => {
  it("builds a dependency's keys once: the same frozen object for every caller, under one hash tag", () => {
    const keys = new SluiceKeys('p');
    const built = keys.dependency('shop', 'pay');
    expect(built).toEqual({
      budget: 'p:{shop/pay}:budget',
      outcomes: 'p:{shop/pay}:outcomes',
      breaker: 'p:{shop/pay}:breaker',
      reporters: 'p:{shop/pay}:reporters',
      activeReporters: 'p:{shop/pay}:active-reporters',
      probes: 'p:{shop/pay}:probes',
      rate: 'p:{shop/pay}:rate',
      leases: 'p:{shop/pay}:leases',
      latency: 'p:{shop/pay}:latency',
      history: 'p:{shop/pay}:history',
      events: 'p:{shop/pay}:events',
    });
    expect(keys.dependency('shop', 'pay')).toBe(built);
    expect(Object.isFrozen(built)).toBe(true);
    expect(keys.dependency('shop', 'search').budget).toBe('p:{shop/search}:budget');
    expect(keys.dependency('other', 'pay').budget).toBe('p:{other/pay}:budget');
  });

  it("names a request's outcome keys with and without a caller's id", () => {
    const requests = new SluiceKeys('p').dependencyRequests('shop', 'pay');
    expect(requests.retry('r-1')).toBe('p:{shop/pay}:retry:r-1');
    expect(requests.retry(undefined)).toBe('p:{shop/pay}:retry:');
    expect(requests.retry('')).toBe('p:{shop/pay}:retry:');
    expect(requests.admit('r-1')).toBe('p:{shop/pay}:admit:r-1');
    expect(requests.admit(undefined)).toBe('p:{shop/pay}:admit:');
  });

  it('keeps a bounded number of dependencies built, and builds the rest again, the same', () => {
    const keys = new SluiceKeys('p');
    const first = keys.dependency('shop', 'dep-0');
    for (let i = 0; i < 20_000; i++) expect(keys.dependency('shop', `dep-${i}`).rate).toBe(`p:{shop/dep-${i}}:rate`);
    const again = keys.dependency('shop', 'dep-0');
    expect(again).not.toBe(first); // forgotten on the way, built again
    expect(again).toEqual(first);
  });
});
