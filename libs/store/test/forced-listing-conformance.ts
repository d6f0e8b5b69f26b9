import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { BreakerAction, DependencyRef, Store } from '../src';
import type { StoreUnderTest } from './store-conformance';

let sequence = 0;
const freshRef = (): DependencyRef => ({ namespace: `forced-${++sequence}`, dependency: 'payments-api' });
/** A registry that forgets a name unused for 300 ms, where the service's forgets after a day. */
const REGISTRY = { cap: 10, retentionMs: 300 };
const READ = { budget: DEFAULT_DEPENDENCY_POLICY.retryBudget, outcomeWindowSeconds: 10 };

/**
 * An operator's forced state outlives the registry of dependencies (which forgets a name nobody
 * used within its retention), in every Store alike: it keeps blocking calls, and the dependency
 * stays listed while the state lasts.
 */
export function describeForcedListingConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Forced states past the registry: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    /** Registers the dependency, then forces it as the admin API does: the action, then the listing kept. */
    const act = async (ref: DependencyRef, action: BreakerAction) => {
      const snapshot = await store.setBreaker(ref, action);
      await store.keepForcedListed(ref, snapshot.record);
      return snapshot;
    };
    const listed = (ref: DependencyRef) => store.listDependencies(ref.namespace, REGISTRY.retentionMs);
    const stateOf = async (ref: DependencyRef) => (await store.readDependency(ref, READ)).breaker.record.state;

    it('keeps a trip until reset in force and listed however long nobody uses the dependency', async () => {
      const ref = freshRef();
      await store.registerDependency(ref, REGISTRY);
      await act(ref, { action: 'trip', reason: 'bad deploy' });
      await subject.pass(400);
      expect(await listed(ref)).toEqual([ref.dependency]);
      expect(await stateOf(ref)).toBe('forced_open');
      await act(ref, { action: 'reset' });
      expect(await listed(ref)).toEqual([]);
      expect(await stateOf(ref)).toBe('closed');
    });

    it('lists a forced state with a duration until it lapses', async () => {
      const ref = freshRef();
      await store.registerDependency(ref, REGISTRY);
      await act(ref, { action: 'force_close', reason: 'false alarm', durationMs: 700 });
      await subject.pass(400);
      expect(await listed(ref)).toEqual([ref.dependency]);
      expect(await stateOf(ref)).toBe('forced_closed');
      await subject.pass(400);
      expect(await listed(ref)).toEqual([]);
      expect(await stateOf(ref)).toBe('closed');
    });

    it('never undoes a trip when the registry forgets its dependency', async () => {
      const ref = freshRef();
      await store.registerDependency(ref, REGISTRY);
      await store.setBreaker(ref, { action: 'trip', reason: 'bad deploy' });
      await subject.pass(400);
      await listed(ref); // the registry forgets the dependency here
      expect(await stateOf(ref)).toBe('forced_open');
      const denied = await store.decideRetry(ref, { budget: READ.budget, delayMs: 0 });
      expect(denied.verdict).toBe('breaker_open');
    });
  });
}
