import { DEFAULT_DEPENDENCY_POLICY, DEFAULT_QUEUE_POLICY } from '@sluice/protocol';
import { MemoryStore, type EventHandler, type Store, type Unsubscribe } from '@sluice/store';
import type { PoliciesFile } from './policies-file';
import { POLICY_CACHE_TTL_MS, PolicyService } from './policy.service';

const FILE: PoliciesFile = { default: { retryBudget: { ratio: 0.2 } }, namespaces: {} };

/** Lets queued microtasks and promise callbacks run (the memory store delivers events in one). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const writeDependency = (store: Store, namespace: string, dependency: string, document: object | null) =>
  store.writePolicy(namespace, { kind: 'dep', name: dependency }, document);

describe('PolicyService', () => {
  let store: MemoryStore;
  let services: PolicyService[];

  const service = (on: Store = store, file = FILE) => {
    const created = new PolicyService(file, on);
    services.push(created);
    return created;
  };

  beforeEach(() => {
    store = new MemoryStore();
    services = [];
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(services.map((created) => created.beforeApplicationShutdown()));
  });

  it('overlays built-in defaults, the file default, the namespace default and the dependency document', async () => {
    await store.writePolicy('shop', { kind: 'default', name: '' }, { retryBudget: { maxAttempts: 2 }, mode: 'shadow' });
    await writeDependency(store, 'shop', 'pay', { retryBudget: { maxAttempts: 4 }, backoff: { jitter: 'none' } });
    const policies = service();
    expect(await policies.forDependency('shop', 'pay')).toEqual({
      ...DEFAULT_DEPENDENCY_POLICY,
      mode: 'shadow',
      retryBudget: { ...DEFAULT_DEPENDENCY_POLICY.retryBudget, ratio: 0.2, maxAttempts: 4 },
      backoff: { ...DEFAULT_DEPENDENCY_POLICY.backoff, jitter: 'none' },
    });
    expect((await policies.forDependency('shop', 'other')).retryBudget.maxAttempts).toBe(2);
    expect((await policies.forDependency('elsewhere', 'pay')).retryBudget).toEqual({
      ...DEFAULT_DEPENDENCY_POLICY.retryBudget,
      ratio: 0.2,
    });
  });

  it('serves named limits (undefined when not defined) and queues (over the defaults)', async () => {
    await store.writePolicy('shop', { kind: 'limit', name: 'checkout' }, { rate: 10, periodMs: 1000, burst: 5 });
    await store.writePolicy('shop', { kind: 'queue', name: 'emails' }, { backoff: { capMs: 5000 } });
    const policies = service();
    expect(await policies.forLimit('shop', 'checkout')).toEqual({ rate: 10, periodMs: 1000, burst: 5 });
    expect(await policies.forLimit('shop', 'search')).toBeUndefined();
    expect(await policies.forQueue('shop', 'emails')).toEqual({
      maxAttempts: 5,
      backoff: { baseMs: 1000, capMs: 5000, jitter: 'full' },
    });
    expect(await policies.forQueue('shop', 'orders')).toEqual(DEFAULT_QUEUE_POLICY);
  });

  it('reads a namespace once: later calls and concurrent first calls cost no store call', async () => {
    const reads = jest.spyOn(store, 'readPolicies');
    const policies = service();
    await Promise.all(Array.from({ length: 20 }, (_, i) => policies.forDependency('shop', `dep-${i % 3}`)));
    expect(reads).toHaveBeenCalledTimes(1);
    await warm(policies, 'shop');
    reads.mockClear();
    for (let i = 0; i < 50; i++) {
      await policies.forDependency('shop', `dep-${i % 5}`);
      await policies.forLimit('shop', 'checkout');
      await policies.forQueue('shop', 'emails');
    }
    expect(reads).not.toHaveBeenCalled();
  });

  it("uses a change made through another instance at once: the namespace's policy event drops the cache", async () => {
    const a = service();
    const b = service();
    expect((await b.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
    expect((await b.forDependency('other', 'pay')).retryBudget.maxAttempts).toBe(3);
    await warm(b, 'shop', 'other');
    const reads = jest.spyOn(store, 'readPolicies');

    await writeDependency(store, 'shop', 'pay', { retryBudget: { maxAttempts: 2 } }); // as instance A would
    a.invalidate('shop');
    await settle();
    expect((await b.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(2);
    expect((await a.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(2);
    // Only namespace shop was read again.
    expect(reads.mock.calls.map(([namespace]) => namespace).sort()).toEqual(['shop', 'shop']);
    await b.forDependency('other', 'pay');
    expect(reads).toHaveBeenCalledTimes(2);

    await writeDependency(store, 'shop', 'pay', null);
    await settle();
    expect((await b.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
  });

  it('bounds staleness by the TTL when an event is lost', async () => {
    const deaf = withSubscription(store, async () => async () => undefined); // subscribed, but hears nothing
    const policies = service(deaf);
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
    await warm(policies, 'shop');
    await writeDependency(store, 'shop', 'pay', { retryBudget: { maxAttempts: 2 } });
    await settle();
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS - 1);
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1);
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(2);
  });

  it('answers from the cache without a promise what forDependency answers, only while it would not read', async () => {
    await writeDependency(store, 'shop', 'pay', { mode: 'shadow' });
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    const policies = service(withSubscription(store, async () => async () => undefined));
    expect(policies.cachedForDependency('shop', 'pay')).toBeUndefined(); // nothing read yet
    const read = policies.forDependency('shop', 'pay');
    expect(policies.cachedForDependency('shop', 'pay')).toBeUndefined(); // in flight
    await read;
    await warm(policies, 'shop');
    const policy = await policies.forDependency('shop', 'pay');
    expect(policies.cachedForDependency('shop', 'pay')).toBe(policy);
    expect(policies.cachedForDependency('shop', 'other')).toEqual(await policies.forDependency('shop', 'other'));
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1);
    expect(policies.cachedForDependency('shop', 'pay')).toBeUndefined(); // expired: read again
    const reread = await policies.forDependency('shop', 'pay');
    expect(policies.cachedForDependency('shop', 'pay')).toBe(reread);
    policies.invalidate('shop');
    expect(policies.cachedForDependency('shop', 'pay')).toBeUndefined();
    // A failed read answers the policies last read, for a short while: so does the cache.
    jest.spyOn(store, 'readPolicies').mockRejectedValueOnce(new Error('store down'));
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow');
    await settle();
    expect(policies.cachedForDependency('shop', 'pay')?.mode).toBe('shadow');
  });

  it('works within the TTL when it cannot subscribe, warns once, and tries to subscribe again', async () => {
    const subscribe = jest.fn(async (): Promise<Unsubscribe> => {
      throw new Error('no subscriber connection');
    });
    const policies = service(withSubscription(store, subscribe));
    const { logger } = (policies as unknown as { watcher: { logger: { warn: () => void; debug: () => void } } })
      .watcher;
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    jest.spyOn(logger, 'debug').mockImplementation(() => undefined);
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('enforce');
    await settle();
    await policies.forDependency('other', 'pay');
    await settle();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String((warn.mock.calls[0] as unknown[])[0])).toContain(`within ${POLICY_CACHE_TTL_MS} ms`);

    await writeDependency(store, 'shop', 'pay', { mode: 'shadow' });
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1);
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow');
    expect(subscribe).toHaveBeenCalledTimes(3); // shop, other, shop again
  });

  it('drops what it read before its subscription was confirmed, once it is', async () => {
    let confirm: () => void = () => undefined;
    const late = withSubscription(store, (namespace, handler) => {
      return new Promise<Unsubscribe>((resolve) => {
        confirm = () => resolve(store.subscribeNamespace(namespace, handler));
      });
    });
    const policies = service(late);
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
    // Written while the subscription was not yet in place: its event is missed.
    await writeDependency(store, 'shop', 'pay', { retryBudget: { maxAttempts: 2 } });
    await settle();
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(3);
    confirm();
    await settle();
    expect((await policies.forDependency('shop', 'pay')).retryBudget.maxAttempts).toBe(2);
  });

  it('does not keep a failed read: the next call asks the store again', async () => {
    const reads = jest.spyOn(store, 'readPolicies').mockRejectedValueOnce(new Error('store down'));
    const policies = service();
    await expect(policies.forDependency('shop', 'pay')).rejects.toThrow('store down');
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('enforce');
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('fails a shared read only for the callers that waited on it from its start; later joiners read again', async () => {
    let fail: (error: Error) => void = () => undefined;
    const reads = jest
      .spyOn(store, 'readPolicies')
      .mockImplementationOnce(() => new Promise((_, reject) => (fail = reject)));
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    const policies = service();
    const first = policies.forDependency('shop', 'pay');
    now.mockReturnValue(start + 30); // joins the read in flight, 30 ms after it started
    const joiner = policies.forDependency('shop', 'pay');
    fail(new Error('store down'));
    await expect(first).rejects.toThrow('store down');
    expect((await joiner).mode).toBe('enforce');
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('decides with the policies last read while a refresh of them fails, and tries again soon', async () => {
    await writeDependency(store, 'shop', 'pay', { mode: 'shadow' });
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    const policies = service(withSubscription(store, async () => async () => undefined));
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow');
    await settle();
    const reads = jest.spyOn(store, 'readPolicies').mockRejectedValueOnce(new Error('store down'));
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1);
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow');
    expect(reads).toHaveBeenCalledTimes(1);
    await writeDependency(store, 'shop', 'pay', { mode: 'enforce' });
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 2);
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow'); // within the retry pause
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1002);
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('enforce');
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('decides with the policies last read when a read fails after an event dropped the one in flight', async () => {
    // A Cluster failover: the master holding the namespace's policies is gone, and the lost
    // subscription says `resync` while a refresh is in flight.
    await writeDependency(store, 'shop', 'pay', { mode: 'shadow' });
    const now = jest.spyOn(Date, 'now');
    const start = Date.now();
    now.mockReturnValue(start);
    let emit: EventHandler = () => undefined;
    const policies = service(
      withSubscription(store, async (_namespace, handler) => {
        emit = handler;
        return async () => undefined;
      }),
    );
    await warm(policies, 'shop');
    expect((await policies.forDependency('shop', 'pay')).mode).toBe('shadow');
    let failInFlight: (error: Error) => void = () => undefined;
    const reads = jest
      .spyOn(store, 'readPolicies')
      .mockImplementationOnce(() => new Promise((_resolve, reject) => (failInFlight = reject)))
      .mockRejectedValue(new Error('store down'));
    now.mockReturnValue(start + POLICY_CACHE_TTL_MS + 1);
    const refreshing = policies.forDependency('shop', 'pay');
    emit({ type: 'resync' } as Parameters<EventHandler>[0]);
    const afterTheEvent = policies.forDependency('shop', 'pay');
    failInFlight(new Error('store down'));

    expect((await refreshing).mode).toBe('shadow');
    expect((await afterTheEvent).mode).toBe('shadow');
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('keeps and follows at most 1000 namespaces, and stops following all of them at shutdown', async () => {
    const unsubscribed: string[] = [];
    const counted = withSubscription(store, async (namespace) => async () => {
      unsubscribed.push(namespace);
    });
    const policies = service(counted);
    for (let i = 0; i <= 1000; i++) await policies.forDependency(`ns-${i}`, 'pay');
    await settle();
    expect(unsubscribed).toEqual(['ns-0']);
    await policies.beforeApplicationShutdown();
    expect(unsubscribed).toHaveLength(1001);
    expect(new Set(unsubscribed).size).toBe(1001);
  });
});

/**
 * Lets the namespaces' subscriptions be confirmed (which drops what was read before them), then
 * reads them again: from here on, the cache holds.
 */
async function warm(policies: PolicyService, ...namespaces: string[]): Promise<void> {
  await settle();
  for (const namespace of namespaces) await policies.forDependency(namespace, 'warm-up');
}

/** The store with its namespace subscriptions replaced. */
function withSubscription(
  store: Store,
  subscribe: (namespace: string, handler: EventHandler) => Promise<Unsubscribe>,
): Store {
  const wrapped = Object.create(store) as Store;
  wrapped.subscribeNamespace = subscribe;
  return wrapped;
}
