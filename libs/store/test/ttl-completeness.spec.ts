import { Redis } from 'ioredis';
import { HISTORY_TTL_SECONDS, LATENCY_BOUNDS_MS } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY, type BreakerPolicy } from '@sluice/protocol';
import { RedisStore, SluiceKeys } from '../src';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../../../test/support/redis';
import { sleep } from '../../../test/support/time';
import { batch } from './store-conformance';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const BREAKER: BreakerPolicy = {
  ...DEFAULT_DEPENDENCY_POLICY.breaker,
  minimumCalls: 10,
  minReporters: 1,
  windowSeconds: 30,
  openMs: 200,
  maxOpenMs: 1000,
  halfOpenProbes: 1,
  probeLeaseMs: 5000,
};
const BUDGET = { ratio: 0.1, minRetriesPerSecond: 10, windowSeconds: 10, maxAttempts: 3 };

/**
 * The keys that live without a TTL (docs/architecture.md, "Keys without a TTL"), each bounded by
 * another rule: the audit stream (trimmed to about AUDIT_ENTRIES_KEPT entries), a namespace's
 * policy documents (one field per document, removed by a delete), and the breaker of a dependency
 * forced open or closed until reset (an operator's trip must hold until they reset it), with the
 * namespace's forced set that keeps it listed (until the last such trip is reset).
 */
const WITHOUT_TTL = [/^[^{]*:audit$/, /\}:policies$/, /\{shop\/ledger\}:breaker$/, /\{shop\}:forced$/];

describe('RedisStore: every key a script writes has a TTL within its bound, or is on the allow-list', () => {
  const prefix = uniquePrefix('ttl');
  const keys = new SluiceKeys(prefix);
  let client: Redis;
  let store: RedisStore;
  beforeAll(async () => {
    client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
    store = new RedisStore({ client, keys, timeoutMs: 2000 });
  });
  afterAll(async () => {
    await deleteKeysWithPrefix(client, prefix);
    await store.close();
  });

  /** The bound of each key's PTTL, ms, by the suffix after its hash tag. */
  /** What follows the prefix and the hash tag: ':budget', ':attempts:<id>', ':namespaces'. */
  const suffixOf = (key: string) => key.slice(prefix.length).replace(/^:\{[^}]*\}/, '');
  const bound = (key: string): number | undefined => {
    const suffix = suffixOf(key);
    const bounds: Array<[RegExp, number]> = [
      [/^:(budget|active-reporters)$/, (BUDGET.windowSeconds + 2) * 1000],
      [/^:(outcomes|reporters|latency)$/, (BREAKER.windowSeconds + 2) * 1000],
      // A day past its openUntil (the trip below lasts a minute).
      [/^:breaker$/, MINUTE + DAY],
      [/^:(callers|deps|namespaces)$/, DAY],
      [/^:(probes|leases)$/, BREAKER.probeLeaseMs + 1000],
      [/^:rate$/, MINUTE],
      // Until the trip with a duration lapses.
      [/^:forced$/, MINUTE],
      [/^:(retry|admit|take):.+$/, 2 * MINUTE],
      [/^:record$/, DAY],
      [/^:(attempts:.+|dlq|dlq-index|dlq-queues)$/, 14 * DAY],
      [/^:history$/, HISTORY_TTL_SECONDS * 1000],
    ];
    return bounds.find(([pattern]) => pattern.test(suffix))?.[1];
  };

  it('after admit (probe, lease, rate limit), takes, retries, reports, claims, attempts, policies and audit', async () => {
    const ref = { namespace: 'shop', dependency: 'payments-api' };
    const registration = { cap: 100, retentionMs: DAY };
    await store.registerNamespace('shop', registration);
    await store.registerDependency(ref, registration);
    const tripping = { budgetWindowSeconds: BUDGET.windowSeconds, breaker: BREAKER };
    const opened = await store.recordOutcomes(
      ref,
      batch({ requests: 10, failures: 10, latency: [...LATENCY_BOUNDS_MS, 0].map((_, i) => (i === 3 ? 10 : 0)) }),
      tripping,
    );
    expect(opened.breaker.record.state).toBe('open');
    await sleep(250);
    const admitted = await store.admit(ref, {
      breaker: BREAKER,
      probeToken: 'probe-1',
      rateLimit: { rate: 10, periodMs: MINUTE, burst: 5 },
      cost: 1,
      concurrency: { limit: 5, leaseMs: 5000 },
      leaseId: 'lease-1',
      requestId: 'admit-1',
    });
    expect(admitted).toMatchObject({ verdict: 'granted', probe: expect.anything(), lease: expect.anything() });
    await store.renewLease(ref, 'lease-1', 4000);
    const other = { namespace: 'shop', dependency: 'search' };
    await store.recordOutcomes(other, batch({ requests: 100, successes: 10, slow: 1 }), tripping);
    await store.decideRetry(other, { budget: BUDGET, delayMs: 0, requestId: 'retry-1' });
    await store.readDependency(other, { budget: BUDGET, outcomeWindowSeconds: BREAKER.windowSeconds });
    await store.takeRateLimit(
      { namespace: 'shop', limit: 'exports', key: 'user-1' },
      { rate: 5, periodMs: 10_000, burst: 5 },
      1,
      'take-1',
    );
    const idem = { namespace: 'shop', key: 'Order:1' };
    await store.claimIdempotencyKey(idem, {
      fingerprint: 'f',
      token: 't',
      leaseMs: 30_000,
      retentionMs: DAY,
      claimId: 'c1',
    });
    await store.completeIdempotencyKey(idem, { token: 't', response: '{}' });
    await store.claimIdempotencyKey(
      { namespace: 'shop', key: 'Order:2' },
      { fingerprint: 'f', token: 'u', leaseMs: 30_000, retentionMs: MINUTE },
    );
    const queue = { namespace: 'shop', queue: 'orders' };
    const attempt = {
      error: 'boom',
      payload: '{}',
      maxAttempts: 2,
      attemptRetentionMs: MINUTE,
      deadLetters: { retentionMs: 14 * DAY, maxLength: 100 },
    };
    for (const messageId of ['failing', 'parked', 'parked', 'redriven', 'redriven']) {
      await store.recordDeliveryAttempt(queue, { ...attempt, messageId });
    }
    await store.redriveDeadLetter(queue, 'redriven');
    await store.noteDeadLetterQueue(queue, { retentionMs: 14 * DAY, maxQueues: 100 });
    await store.writePolicy('shop', { kind: 'dep', name: 'payments-api' }, { breaker: { openMs: 1000 } });
    await store.appendAudit({ actor: 'ops', action: 'trip', namespace: 'shop', target: 'search', reason: 'test' });
    await store.setBreaker(other, { action: 'trip', reason: 'test', durationMs: MINUTE });
    const untilReset = { namespace: 'shop', dependency: 'ledger' };
    await store.keepForcedListed(
      untilReset,
      (await store.setBreaker(untilReset, { action: 'trip', reason: 'until reset' })).record,
    );
    const forMinute = { namespace: 'ops', dependency: 'search' };
    const timed = await store.setBreaker(forMinute, { action: 'trip', reason: 'test', durationMs: MINUTE });
    await store.keepForcedListed(forMinute, timed.record);
    // A window that neither trips nor was cleared: its outcomes and failing reporters stay.
    await store.recordOutcomes(
      { namespace: 'shop', dependency: 'email' },
      batch({ successes: 4, failures: 1 }),
      tripping,
    );

    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batchOfKeys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      found.push(...batchOfKeys);
    } while (cursor !== '0');
    const problems: string[] = [];
    for (const key of found.sort()) {
      const pttl = await client.pttl(key);
      const allowed = WITHOUT_TTL.some((pattern) => pattern.test(key));
      const limit = bound(key);
      // -2: expired since the scan, so it had a TTL.
      if (allowed || pttl === -2) continue;
      if (limit === undefined) problems.push(`${key}: no bound known (PTTL ${pttl})`);
      else if (!(pttl > 0 && pttl <= limit)) problems.push(`${key}: PTTL ${pttl}, bound ${limit}`);
    }
    expect(problems).toEqual([]);
    // Every kind of key was written: the test saw what it claims to check.
    const suffixes = new Set<string>(found.map((key) => suffixOf(key).split(':')[1]));
    const missing = [
      'active-reporters',
      'admit',
      'attempts',
      'breaker',
      'budget',
      'dlq',
      'dlq-index',
      'dlq-queues',
      'history',
      'latency',
      'leases',
      'outcomes',
      'probes',
      'rate',
      'record',
      'reporters',
      'retry',
      'take',
      'namespaces',
      'deps',
      'forced',
      'policies',
      'audit',
    ].filter((kind) => !suffixes.has(kind));
    expect(missing).toEqual([]);
  });
});
