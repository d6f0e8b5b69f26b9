import { DEFAULT_DEPENDENCY_POLICY, type BreakerPolicy, type RetryBudgetPolicy } from '@sluice/protocol';
import { randomBytes } from 'node:crypto';
import type { DependencyRef, Store } from '../src';
import { batch } from './store-conformance';

/**
 * Several stores over one state: on Redis, N RedisStore instances on connections of their own
 * sharing one key prefix (as N coordinator instances do); in memory, one store seen N times.
 */
export interface StoresUnderTest {
  stores: Store[];
  /** Lets `ms` pass for the stores: a fake clock moves, a real one is waited on. */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

const KEYS = 12;
const CALLS_PER_KEY = 24;
const BUDGET: RetryBudgetPolicy = { ratio: 0, minRetriesPerSecond: 3, windowSeconds: 10, maxAttempts: 3 }; // limit 30
const BREAKER: BreakerPolicy = {
  ...DEFAULT_DEPENDENCY_POLICY.breaker,
  minimumCalls: 10,
  openMs: 300,
  maxOpenMs: 1000,
  halfOpenProbes: 2,
  probeLeaseMs: 5000,
};

let sequence = 0;
const unique = (label: string) => `${label}-${++sequence}-${randomBytes(3).toString('hex')}`;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Calls `call(store, key)` CALLS_PER_KEY times for each of KEYS keys, all at once, spread over the
 * stores so that calls about one key arrive on different connections; answers by key.
 */
async function stormOver<T>(
  stores: Store[],
  keys: string[],
  call: (store: Store, key: string, n: number) => Promise<T>,
): Promise<Map<string, T[]>> {
  const calls = keys.flatMap((key, k) =>
    range(CALLS_PER_KEY).map((n) => call(stores[(n + k) % stores.length], key, n).then((answer) => ({ key, answer }))),
  );
  const byKey = new Map<string, T[]>(keys.map((key) => [key, []]));
  for (const { key, answer } of await Promise.all(calls)) byKey.get(key)!.push(answer);
  return byKey;
}

/**
 * The atomic decisions held across many connections at once: a check and its change must be one
 * step in the store, not one step per connection (commands of one connection queue in order, so
 * a suite over one connection cannot tell a check-then-set in two round trips from an atomic one).
 */
export function describeConcurrencyConformance(label: string, open: () => Promise<StoresUnderTest>): void {
  describe(`Concurrency over many connections: ${label}`, () => {
    let subject: StoresUnderTest;
    let stores: Store[];
    beforeAll(async () => {
      subject = await open();
      stores = subject.stores;
    });
    afterAll(() => subject.cleanup());

    it('grants exactly one claim per idempotency key', async () => {
      const keys = range(KEYS).map(() => unique('Order'));
      const answers = await stormOver(stores, keys, (store, key) =>
        store.claimIdempotencyKey(
          { namespace: 'concurrency', key },
          { fingerprint: 'f', token: randomBytes(8).toString('hex'), leaseMs: 30_000, retentionMs: 60_000 },
        ),
      );
      for (const outcomes of answers.values()) {
        expect(outcomes.filter((o) => o.outcome === 'claimed')).toHaveLength(1);
        expect(outcomes.filter((o) => o.outcome === 'in_flight')).toHaveLength(CALLS_PER_KEY - 1);
      }
    });

    it('grants exactly the budget of each dependency, and counts only the grants', async () => {
      const keys = range(KEYS).map(() => unique('dep'));
      const calls = { ...BUDGET, minRetriesPerSecond: 2 }; // limit 20 of 24 asks
      const answers = await stormOver(stores, keys, (store, dependency) =>
        store.decideRetry({ namespace: 'concurrency', dependency }, { budget: calls, delayMs: 0 }),
      );
      for (const [dependency, outcomes] of answers) {
        expect(outcomes.filter((o) => o.verdict === 'granted')).toHaveLength(20);
        const read = await stores[0].readDependency(
          { namespace: 'concurrency', dependency },
          { budget: calls, outcomeWindowSeconds: 10 },
        );
        expect(read.budget.retries).toBe(20);
      }
    });

    it('hands out exactly halfOpenProbes probe leases per half-open breaker', async () => {
      const keys = range(KEYS).map(() => unique('dep'));
      const refs = keys.map((dependency): DependencyRef => ({ namespace: 'concurrency', dependency }));
      const policy = { budgetWindowSeconds: 10, breaker: BREAKER };
      for (const [i, ref] of refs.entries()) {
        const opened = await stores[i % stores.length].recordOutcomes(
          ref,
          batch({ requests: 10, failures: 10 }),
          policy,
        );
        expect(opened.breaker.record.state).toBe('open');
      }
      await subject.pass(350);
      const answers = await stormOver(stores, keys, (store, dependency, n) =>
        store.admit(
          { namespace: 'concurrency', dependency },
          {
            breaker: BREAKER,
            probeToken: `probe-${n}`,
            leaseId: `lease-${n}`,
            rateLimit: null,
            cost: 1,
            concurrency: null,
          },
        ),
      );
      for (const outcomes of answers.values()) {
        expect(outcomes.filter((o) => o.probe)).toHaveLength(BREAKER.halfOpenProbes);
        expect(outcomes.filter((o) => o.verdict === 'granted')).toHaveLength(BREAKER.halfOpenProbes);
        expect(outcomes.filter((o) => o.breaker.transitions.length > 0)).toHaveLength(1);
      }
    });

    it('parks each message exactly once, counting every failure once', async () => {
      const queue = unique('queue');
      const messages = range(KEYS).map(() => unique('msg'));
      const maxAttempts = 5;
      const answers = await stormOver(stores, messages, (store, messageId) =>
        store.recordDeliveryAttempt(
          { namespace: 'concurrency', queue },
          {
            messageId,
            error: 'boom',
            payload: '{}',
            maxAttempts,
            attemptRetentionMs: 60_000,
            deadLetters: { retentionMs: 600_000, maxLength: 10_000 },
          },
        ),
      );
      for (const outcomes of answers.values()) {
        const counted = outcomes.map((o) => o.attempt).sort((a, b) => a - b);
        expect(counted).toEqual([1, 2, 3, 4, ...Array(CALLS_PER_KEY - 4).fill(maxAttempts)]);
        expect(outcomes.filter((o) => o.parkedNow)).toHaveLength(1);
        expect(outcomes.filter((o) => o.deadLetter)).toHaveLength(CALLS_PER_KEY - 4);
      }
      const retention = { retentionMs: 600_000, maxLength: 10_000 };
      expect(await stores[0].countDeadLetters({ namespace: 'concurrency', queue }, retention)).toBe(KEYS);
    });

    it('holds a concurrency limit across connections', async () => {
      const keys = range(KEYS).map(() => unique('dep'));
      const answers = await stormOver(stores, keys, (store, dependency, n) =>
        store.admit(
          { namespace: 'concurrency', dependency },
          {
            breaker: BREAKER,
            probeToken: `probe-${n}`,
            leaseId: `lease-${n}`,
            rateLimit: null,
            cost: 1,
            concurrency: { limit: 5, leaseMs: 30_000 },
          },
        ),
      );
      for (const outcomes of answers.values()) {
        expect(outcomes.filter((o) => o.verdict === 'granted')).toHaveLength(5);
      }
    });
  });
}
