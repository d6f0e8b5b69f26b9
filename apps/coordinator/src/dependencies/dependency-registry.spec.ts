import { MemoryStore, StoreUnavailableError } from '@sluice/store';
import { testConfig } from '../../../../test/support/coordinator';
import { MetricsService } from '../metrics/metrics.service';
import { capNamespaces } from '../store/namespace-cap';
import { DependencyRegistry } from './dependency-registry.service';

describe('DependencyRegistry', () => {
  const registries: DependencyRegistry[] = [];
  const registryOn = (store: MemoryStore, cap = 1000) => {
    const registry = new DependencyRegistry(
      store,
      testConfig({ maxDependenciesPerNamespace: cap }),
      new MetricsService(),
    );
    registries.push(registry);
    return registry;
  };
  afterEach(() => registries.splice(0).forEach((registry) => registry.onModuleDestroy()));

  it('shares one store call among simultaneous first asks for a dependency', async () => {
    const store = new MemoryStore();
    const registrations = jest.spyOn(store, 'registerDependency');
    const registry = registryOn(store);
    await Promise.all(Array.from({ length: 100 }, () => registry.admit('shop', 'payments-api')));
    expect(registrations).toHaveBeenCalledTimes(1);
    expect(registry.isRegistered({ namespace: 'shop', dependency: 'payments-api' })).toBe(true);
  });

  it('refuses every simultaneous ask past the cap, and remembers nothing of them', async () => {
    const store = new MemoryStore();
    const registry = registryOn(store, 1);
    await registry.admit('shop', 'a');
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => registry.admit('shop', 'b')));
    expect(outcomes.every((outcome) => outcome.status === 'rejected')).toBe(true);
    expect(registry.isRegistered({ namespace: 'shop', dependency: 'b' })).toBe(false);
  });

  it('lets calls go on unregistered while the registry cannot be reached, and registers at the next use', async () => {
    const store = new MemoryStore();
    const registrations = jest
      .spyOn(store, 'registerDependency')
      .mockRejectedValueOnce(new StoreUnavailableError('Redis failed: Connection is closed.'));
    const registry = registryOn(store);
    const ref = { namespace: 'shop', dependency: 'payments-api' };
    await Promise.all(Array.from({ length: 10 }, () => registry.admit('shop', 'payments-api')));
    expect(registrations).toHaveBeenCalledTimes(1);
    expect(registry.isRegistered(ref)).toBe(false);
    await registry.admit('shop', 'payments-api');
    expect(registrations).toHaveBeenCalledTimes(2);
    expect(registry.isRegistered(ref)).toBe(true);
    expect(await store.listDependencies('shop', 60_000)).toEqual(['payments-api']);
  });

  it('lets at most the cap of new dependencies through while the registry cannot be reached', async () => {
    const store = new MemoryStore();
    const unavailable = jest
      .spyOn(store, 'registerDependency')
      .mockRejectedValue(new StoreUnavailableError('Redis failed: Connection is closed.'));
    const registry = registryOn(store, 3);
    for (const name of ['a', 'b', 'c']) await registry.admit('shop', name);
    // The cap counts over every namespace: a fourth name anywhere gets the registry's failure.
    await expect(registry.admit('other', 'a')).rejects.toBeInstanceOf(StoreUnavailableError);
    await registry.admit('shop', 'a'); // already let through: still goes on
    // The registry answers again: what it let through is forgotten, and new names go on.
    unavailable.mockRestore();
    await registry.admit('shop', 'e');
    expect(await store.listDependencies('shop', 60_000)).toEqual(['e']);
    jest
      .spyOn(store, 'registerDependency')
      .mockRejectedValue(new StoreUnavailableError('Redis failed: Connection is closed.'));
    await registry.admit('shop', 'f');
  });

  it('still refuses past the cap, and does not take another failure for unavailability', async () => {
    const store = new MemoryStore();
    const registry = registryOn(store, 1);
    await registry.admit('shop', 'a');
    await expect(registry.admit('shop', 'b')).rejects.toMatchObject({ code: 'too_many_dependencies' });
    jest.spyOn(store, 'registerDependency').mockRejectedValueOnce(new TypeError('a bug'));
    await expect(registry.admit('shop', 'c')).rejects.toThrow('a bug');
  });

  it('registers a namespace once for simultaneous first uses, under the cap', async () => {
    const store = new MemoryStore();
    const registrations = jest.spyOn(store, 'registerNamespace');
    const capped = capNamespaces(store, 1);
    const ref = (namespace: string) => ({ namespace, dependency: 'd' });
    const registration = { cap: 10, retentionMs: 60_000 };
    await Promise.all(Array.from({ length: 50 }, () => capped.registerDependency(ref('shop'), registration)));
    expect(registrations).toHaveBeenCalledTimes(1);
    await expect(capped.registerDependency(ref('other'), registration)).rejects.toMatchObject({
      code: 'too_many_namespaces',
    });
    expect(await store.listNamespaces(60_000)).toEqual(['shop']);
  });
});
