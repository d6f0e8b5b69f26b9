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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
    store = new MemoryStore();
    policies = new PolicyService(FILE, store);
  });

  afterEach(async () => {
    seeders.splice(0).forEach((created) => created.beforeApplicationShutdown());
    await policies.beforeApplicationShutdown();
    jest.restoreAllMocks();
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
    const started = Date.now();
    await background.onApplicationBootstrap();
    expect(Date.now() - started).toBeLessThan(500);
    // The one failed write is retried; the others succeeded and are not written again.
    expect(background.done).toBe(false);
    await sleep(1300);
    expect(background.done).toBe(true);
    expect(write).toHaveBeenCalledTimes(5 + 2);
    expect((await policies.forDependency('search', 'index')).mode).toBe('enforce');
  });

  it('waits at most about 2 s at boot for a store that does not answer', async () => {
    jest.spyOn(store, 'writePolicy').mockImplementation(() => new Promise(() => undefined));
    const started = Date.now();
    await seeder().onApplicationBootstrap();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('stops retrying at shutdown', async () => {
    const write = jest.spyOn(store, 'writePolicy').mockRejectedValue(new StoreUnavailableError('down'));
    const stopped = seeder();
    await stopped.onApplicationBootstrap();
    const calls = write.mock.calls.length;
    stopped.beforeApplicationShutdown();
    await sleep(1300);
    expect(write).toHaveBeenCalledTimes(calls);
    expect(stopped.done).toBe(false);
  });
});
