import { MemoryStore, StoreUnavailableError, type Store } from '@sluice/store';
import { parsePolicies } from './policies-file';
import { PolicySeeder, seedDocuments } from './policy-seeder';
import { PolicyService } from './policy.service';

const FILE = parsePolicies(
  {
    default: { mode: 'shadow' },
    namespaces: {
      shop: {
        default: { retryBudget: { ratio: 0.3 } },
        dependencies: { pay: { retryBudget: { maxAttempts: 2 } } },
        limits: { checkout: { rate: 100, periodMs: 1000, burst: 20 } },
        queues: { emails: { maxAttempts: 8 } },
      },
      search: { dependencies: { index: { mode: 'enforce' } } },
    },
  },
  'test',
);

/** Whether `promise` has settled, after the microtasks queued so far have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.finally(() => (done = true)).catch(() => undefined);
  await jest.advanceTimersByTimeAsync(0);
  return done;
}

describe('PolicySeeder', () => {
  let store: MemoryStore;
  let policies: PolicyService;
  const seeders: PolicySeeder[] = [];

  const seeder = (on: Store = store) => {
    const created = new PolicySeeder(FILE, on, policies);
    seeders.push(created);
    const { logger } = created as unknown as { logger: Record<string, () => void> };
    for (const level of ['log', 'warn']) jest.spyOn(logger, level).mockImplementation(() => undefined);
    return created;
  };

  beforeEach(() => {
    // The seeder's boot wait and retry schedule run on timers: a fake clock drives them.
    jest.useFakeTimers();
    store = new MemoryStore();
    policies = new PolicyService(FILE, store);
  });

  afterEach(async () => {
    seeders.splice(0).forEach((created) => created.beforeApplicationShutdown());
    await policies.beforeApplicationShutdown();
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it("lists every namespace document of the file, but not the file's own default", () => {
    expect(seedDocuments(FILE).map(({ namespace, kind, name }) => `${namespace}/${kind}/${name}`)).toEqual([
      'shop/default/',
      'shop/dep/pay',
      'shop/limit/checkout',
      'shop/queue/emails',
      'search/dep/index',
    ]);
  });

  it('writes only what the store lacks: an operator change is kept, and nothing is written twice', async () => {
    await store.writePolicy('shop', { kind: 'dep', name: 'pay' }, { retryBudget: { maxAttempts: 5 } });
    const first = seeder();
    await first.onApplicationBootstrap();
    expect(first.done).toBe(true);
    const stored = await store.readPolicies('shop');
    expect(stored.find((policy) => policy.kind === 'dep')).toMatchObject({
      version: 1,
      document: { retryBudget: { maxAttempts: 5 } },
    });
    expect(await policies.forDependency('shop', 'pay')).toMatchObject({
      mode: 'shadow',
      retryBudget: { ratio: 0.3, maxAttempts: 5 },
    });
    expect(await policies.forLimit('shop', 'checkout')).toEqual({ rate: 100, periodMs: 1000, burst: 20 });
    expect((await policies.forQueue('shop', 'emails')).maxAttempts).toBe(8);

    // A restart: everything is already there.
    const again = await seeder().seed();
    expect(again.seeded).toEqual([]);
    expect(again.kept).toHaveLength(5);
    expect((await store.readPolicies('shop')).every((policy) => policy.version === 1)).toBe(true);
  });

  it('does not hold boot up when the store is down, and seeds in the background once it is back', async () => {
    const write = jest
      .spyOn(store, 'writePolicy')
      .mockRejectedValueOnce(new StoreUnavailableError('down'))
      .mockRejectedValueOnce(new StoreUnavailableError('down'));
    const background = seeder();
    // Boot goes on as soon as the pass failed: no time passes.
    expect(await settled(background.onApplicationBootstrap())).toBe(true);
    // The two failed writes are retried; the others succeeded and are not written again.
    expect(background.done).toBe(false);
    expect(write).toHaveBeenCalledTimes(5);
    await jest.advanceTimersByTimeAsync(999);
    expect(write).toHaveBeenCalledTimes(5); // the retry is due 1 s after the failure
    await jest.advanceTimersByTimeAsync(1);
    expect(background.done).toBe(true);
    expect(write).toHaveBeenCalledTimes(5 + 2);
    expect((await policies.forDependency('search', 'index')).mode).toBe('enforce');
  });

  it('waits 2 s at boot for a store that does not answer, and no longer', async () => {
    jest.spyOn(store, 'writePolicy').mockImplementation(() => new Promise(() => undefined));
    const boot = seeder().onApplicationBootstrap();
    expect(await settled(boot)).toBe(false);
    await jest.advanceTimersByTimeAsync(1999);
    expect(await settled(boot)).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(await settled(boot)).toBe(true);
  });

  it('stops retrying at shutdown', async () => {
    const write = jest.spyOn(store, 'writePolicy').mockRejectedValue(new StoreUnavailableError('down'));
    const stopped = seeder();
    await stopped.onApplicationBootstrap();
    const calls = write.mock.calls.length;
    stopped.beforeApplicationShutdown();
    await jest.advanceTimersByTimeAsync(120_000); // past every retry the schedule would have made
    expect(write).toHaveBeenCalledTimes(calls);
    expect(stopped.done).toBe(false);
  });
});
