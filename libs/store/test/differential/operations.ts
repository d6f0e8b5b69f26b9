import { LATENCY_BOUNDS_MS, type BudgetRule, type RandomSource } from '@sluice/core';
import type { BreakerPolicy, ConcurrencyPolicy, RateLimitPolicy, RetryBudgetPolicy } from '@sluice/protocol';
import type {
  AdmitRequest,
  BreakerAction,
  DeadLetterRetention,
  DependencyRef,
  IdempotencyRef,
  OutcomeBatch,
  PolicyDocumentRef,
  PolicyWriteCondition,
  QueueRef,
  RateLimitRef,
  RetryAskInput,
} from '../../src';

/**
 * One step of a differential run: a Store operation with its arguments, or time passing. Every
 * argument is plain data chosen by the seed, but for what an operation takes from a reply of its
 * own side (keepForcedListed's breaker, reassertBreaker's forced state, a dead-letter cursor):
 * those are named here and looked up on each side (sides.ts).
 */
export type Op =
  | { op: 'pass'; ms: number }
  | {
      op: 'decideRetry';
      ref: DependencyRef;
      budget: RetryBudgetPolicy;
      delayMs: number;
      deadlineMs?: number;
      requestId?: string;
      latencyWindowSeconds: number;
    }
  | {
      op: 'decideRetries';
      ref: DependencyRef;
      budget: RetryBudgetPolicy;
      asks: RetryAskInput[];
      latencyWindowSeconds: number;
    }
  | {
      op: 'recordOutcomes';
      ref: DependencyRef;
      batch: OutcomeBatch;
      budgetWindowSeconds: number;
      breaker: BreakerPolicy;
      budgetRule?: BudgetRule;
    }
  | { op: 'readHistory'; ref: DependencyRef }
  | ({ op: 'admit'; ref: DependencyRef } & AdmitRequest)
  | { op: 'releaseLease'; ref: DependencyRef; leaseId: string }
  | { op: 'renewLease'; ref: DependencyRef; leaseId: string; leaseMs: number }
  | { op: 'takeRateLimit'; ref: RateLimitRef; policy: RateLimitPolicy; cost: number; requestId?: string }
  | { op: 'setBreaker'; ref: DependencyRef; action: BreakerAction }
  | { op: 'keepForcedListed'; ref: DependencyRef }
  | { op: 'reassertBreaker'; ref: DependencyRef }
  | {
      op: 'readDependency';
      ref: DependencyRef;
      budget: RetryBudgetPolicy;
      outcomeWindowSeconds: number;
      rateLimit?: RateLimitPolicy;
    }
  | { op: 'registerDependency'; ref: DependencyRef; cap: number; retentionMs: number; by: 'caller' | 'operator' }
  | { op: 'listDependencies'; namespace: string; retentionMs: number }
  | { op: 'countDependencies'; namespace: string; retentionMs: number }
  | { op: 'registerNamespace'; namespace: string; cap: number; retentionMs: number }
  | { op: 'listNamespaces'; retentionMs: number }
  | {
      op: 'writePolicy';
      namespace: string;
      ref: PolicyDocumentRef;
      document: unknown;
      condition?: PolicyWriteCondition;
    }
  | { op: 'readPolicies'; namespace: string }
  | {
      op: 'appendAudit';
      actor: string;
      action: string;
      namespace: string;
      target: string;
      reason: string | null;
      durationMs?: number | null;
      endsAt?: number | null;
    }
  | { op: 'readAudit'; namespace?: string; limit: number }
  | {
      op: 'claimIdempotencyKey';
      ref: IdempotencyRef;
      fingerprint: string;
      token: string;
      claimId?: string;
      leaseMs: number;
      retentionMs: number;
    }
  | { op: 'completeIdempotencyKey'; ref: IdempotencyRef; token: string; response: string }
  | { op: 'releaseIdempotencyKey'; ref: IdempotencyRef; token: string }
  | { op: 'readIdempotencyKey'; ref: IdempotencyRef }
  | {
      op: 'recordDeliveryAttempt';
      ref: QueueRef;
      messageId: string;
      maxAttempts: number;
      attemptRetentionMs: number;
      deadLetters: DeadLetterRetention;
      attempt?: number;
      payload: string | null;
      error: string | null;
    }
  | { op: 'ackDelivery'; ref: QueueRef; messageId: string }
  | { op: 'listDeadLetters'; ref: QueueRef; limit: number; fromCursor: boolean; retention: DeadLetterRetention }
  | { op: 'redriveDeadLetter'; ref: QueueRef; messageId: string }
  | { op: 'purgeDeadLetter'; ref: QueueRef; messageId: string }
  | { op: 'countDeadLetters'; ref: QueueRef; retention: DeadLetterRetention }
  | { op: 'noteDeadLetterQueue'; ref: QueueRef; retentionMs: number; maxQueues: number }
  | { op: 'listDeadLetterQueues'; namespace: string; retentionMs: number; limit: number; after?: string }
  | { op: 'readStoreEpochs' };

export type OpName = Op['op'];

/** The longest any generated duration runs, so a run sees leases, probes, windows and retentions lapse. */
export const LONGEST = {
  windowSeconds: 3,
  openMs: 1500,
  leaseMs: 900,
  retentionMs: 3000,
  rateLimitPeriodMs: 2000,
  /** How long the dependencies that hold state stay registered: longer than any run (see REGISTRY_ONLY). */
  heldRegistrationMs: 120_000,
} as const;

const NAMESPACES = ['ns1', 'ns2'];
/**
 * A namespace whose dependencies are only registered, listed and counted, with a short retention.
 * The namespaces above hold their dependencies' state, and register them for longer than a run:
 * MemoryStore drops a forgotten dependency's state with its name, while Redis keeps each key to its
 * own TTL, so the two agree only while the registry's retention outlasts the state (a day in the
 * coordinator, against windows of seconds and breakers open for minutes).
 */
const REGISTRY_ONLY = { namespace: 'reg', dependencies: ['x', 'y', 'z'] };
const HELD_REGISTRATION_MS = LONGEST.heldRegistrationMs;
export const DEPENDENCIES: DependencyRef[] = [
  { namespace: 'ns1', dependency: 'api' },
  { namespace: 'ns1', dependency: 'db' },
  { namespace: 'ns2', dependency: 'mail' },
];
const IDEMPOTENCY_KEYS: IdempotencyRef[] = [
  { namespace: 'ns1', key: 'Order:1' },
  { namespace: 'ns1', key: 'Order:2' },
];
const QUEUES: QueueRef[] = [
  { namespace: 'ns1', queue: 'orders' },
  { namespace: 'ns2', queue: 'emails' },
];
/** Queues noted in a namespace's list of those that parked dead letters (names only: nothing is parked in them). */
const NOTED_QUEUES = ['orders', 'emails', 'invoices', 'refunds'];
const MESSAGES = ['m1', 'm2', 'm3', 'm4'];
const REPORTERS = ['pod-1', 'pod-2', 'pod-3'];

/** The namespaces and dependencies a run subscribes to: every channel an operation may publish on. */
export const CHANNELS = { namespaces: [...NAMESPACES, REGISTRY_ONLY.namespace], dependencies: DEPENDENCIES };

class Chooser {
  constructor(readonly random: RandomSource) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)];
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
}

/** The policies a seed mostly uses: short enough that windows, leases and opens lapse within a run. */
interface Terms {
  budget: RetryBudgetPolicy;
  breaker: BreakerPolicy;
  rateLimit: RateLimitPolicy;
  concurrency: ConcurrencyPolicy;
  /** The registry-only namespace's terms, and the namespaces' registry's. */
  registration: { cap: number; retentionMs: number };
  deadLetters: DeadLetterRetention;
}

function randomTerms(c: Chooser): Terms {
  return {
    budget: {
      ...(c.chance(0.3) ? { mode: 'fixed' as const } : c.chance(0.5) ? { maxRatio: c.pick([0.5, 0.8]) } : {}),
      ratio: c.pick([0.1, 0.2, 0.5]),
      minRetriesPerSecond: c.int(1, 3),
      windowSeconds: c.int(1, LONGEST.windowSeconds),
      maxAttempts: 3,
    },
    breaker: {
      failureRateThreshold: c.pick([0.3, 0.5]),
      slowCallRateThreshold: c.pick([0.5, 1]),
      slowCallMs: LATENCY_BOUNDS_MS[c.int(2, 6)],
      minimumCalls: c.int(3, 8),
      windowSeconds: c.int(1, LONGEST.windowSeconds),
      openMs: c.int(100, 500),
      maxOpenMs: LONGEST.openMs,
      halfOpenProbes: c.int(1, 2),
      closeAfterSuccesses: c.int(1, 2),
      probeLeaseMs: c.int(100, 600),
      minReporters: c.int(1, 2),
    },
    rateLimit: { rate: c.int(2, 10), periodMs: c.pick([500, 1000, LONGEST.rateLimitPeriodMs]), burst: c.int(1, 4) },
    concurrency: { limit: c.int(1, 3), leaseMs: c.int(150, LONGEST.leaseMs) },
    registration: { cap: c.int(1, 3), retentionMs: c.int(500, LONGEST.retentionMs) },
    deadLetters: {
      retentionMs: c.int(500, LONGEST.retentionMs),
      maxLength: c.int(1, 3),
      ...(c.chance(0.3) ? { maxBytes: 40 } : {}),
    },
  };
}

/**
 * A reporter's batch: counts, latencies, and mostly the outcome of the dependency's latest probe
 * token (the one a half-open breaker most likely granted), so a probe's lease is given back while
 * the breaker is still half-open and the next admission can take it.
 */
function randomBatch(c: Chooser, probeTokens: string[]): OutcomeBatch {
  const probe =
    probeTokens.length > 0 && c.chance(0.5)
      ? [c.chance(0.7) ? probeTokens[probeTokens.length - 1] : c.pick(probeTokens)]
      : [];
  const failures = c.int(0, 6);
  const slow = c.chance(0.3) ? c.int(0, 3) : 0;
  const successes = c.int(0, 8);
  const batch: OutcomeBatch = {
    reporter: c.pick(REPORTERS),
    requests: c.int(0, 20),
    successes,
    failures,
    slow,
    probes: probe.map((token) => ({ token, success: c.chance(0.7) })),
  };
  if (c.chance(0.3)) batch.retries = c.int(0, 3);
  if (c.chance(0.4)) batch.retriesSucceeded = c.int(0, 3);
  if (c.chance(0.5)) {
    batch.latency = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    for (let i = 0; i < 3; i++) batch.latency[c.int(0, LATENCY_BOUNDS_MS.length)] += c.int(1, 5);
  }
  if (c.chance(0.15)) {
    batch.reporters = REPORTERS.slice(0, c.int(1, 3)).map((reporter) => ({ reporter, failing: c.chance(0.5) }));
  }
  return batch;
}

/** Names a run hands out as it goes (probe tokens, lease ids, fencing tokens), so later steps can use them. */
interface Issued {
  /** Dependency → the probe tokens its admissions were given, in order. */
  probeTokens: Map<string, string[]>;
  leaseIds: string[];
  /**
   * Retry request ids by the budget window of their first ask: a repeat keeps it. (A kept grant
   * answers its budget with the window of the first ask in memory, of the repeat on Redis, which
   * keeps no window: they differ only when a policy changes between a request's repeats.)
   */
  retryIds: Map<number, string[]>;
  admitIds: string[];
  takeIds: string[];
  tokens: Map<string, string[]>;
  count: number;
}

/** One operation, or a short scenario of several (each followed by its reads). */
type Generator = (c: Chooser, terms: Terms, issued: Issued) => Op | Op[];

const fresh = (issued: Issued, kind: string) => `${kind}-${++issued.count}`;
/** An id used before (a repeat) or a new one, or none. */
function requestId(c: Chooser, issued: Issued, used: string[], kind: string): string | undefined {
  if (c.chance(0.4)) return undefined;
  if (used.length > 0 && c.chance(0.4)) return c.pick(used);
  const id = fresh(issued, kind);
  used.push(id);
  return id;
}
const probeTokensOf = (issued: Issued, ref: DependencyRef): string[] => {
  const key = `${ref.namespace}/${ref.dependency}`;
  const tokens = issued.probeTokens.get(key) ?? [];
  issued.probeTokens.set(key, tokens);
  return tokens;
};
const retryIdsOf = (issued: Issued, budget: RetryBudgetPolicy): string[] => {
  const ids = issued.retryIds.get(budget.windowSeconds) ?? [];
  issued.retryIds.set(budget.windowSeconds, ids);
  return ids;
};
const someBudget = (c: Chooser, terms: Terms): RetryBudgetPolicy =>
  c.chance(0.85) ? terms.budget : { ...terms.budget, windowSeconds: c.int(1, LONGEST.windowSeconds) };
const someBreaker = (c: Chooser, terms: Terms): BreakerPolicy =>
  c.chance(0.85)
    ? terms.breaker
    : { ...terms.breaker, minimumCalls: c.int(1, 10), windowSeconds: c.int(1, LONGEST.windowSeconds) };
const idemKey = (ref: IdempotencyRef) => `${ref.namespace}/${ref.key}`;

/** Each operation's generator, with its weight in a run. */
const GENERATORS: Array<[weight: number, generate: Generator]> = [
  [4, (c) => ({ op: 'pass', ms: c.chance(0.1) ? c.int(800, 1600) : c.int(0, 250) })],
  [
    6,
    (c, terms, issued) => {
      const deadline = c.chance(0.3) ? { deadlineMs: c.int(0, 1200) } : {};
      const budget = someBudget(c, terms);
      const id = requestId(c, issued, retryIdsOf(issued, budget), 'retry');
      return {
        op: 'decideRetry',
        ref: c.pick(DEPENDENCIES),
        budget,
        delayMs: c.int(0, 300),
        ...deadline,
        ...(id ? { requestId: id } : {}),
        latencyWindowSeconds: terms.breaker.windowSeconds,
      };
    },
  ],
  [
    3,
    (c, terms, issued) => {
      const budget = someBudget(c, terms);
      const asks = Array.from({ length: c.int(1, 5) }, (): RetryAskInput => {
        const id = requestId(c, issued, retryIdsOf(issued, budget), 'retry');
        return {
          delayMs: c.int(0, 300),
          ...(c.chance(0.2) ? { deadlineMs: c.int(0, 1200) } : {}),
          ...(id ? { requestId: id } : {}),
          ...(c.chance(0.1) ? { read: true } : {}),
        };
      });
      return {
        op: 'decideRetries',
        ref: c.pick(DEPENDENCIES),
        budget,
        asks,
        latencyWindowSeconds: terms.breaker.windowSeconds,
      };
    },
  ],
  [
    8,
    (c, terms, issued) => {
      const ref = c.pick(DEPENDENCIES);
      const { windowSeconds, maxAttempts: _, ...rule } = someBudget(c, terms);
      return {
        op: 'recordOutcomes',
        ref,
        batch: randomBatch(c, probeTokensOf(issued, ref)),
        budgetWindowSeconds: windowSeconds,
        breaker: someBreaker(c, terms),
        ...(c.chance(0.8) ? { budgetRule: rule } : {}),
      };
    },
  ],
  [
    6,
    (c, terms, issued) => {
      const probeToken = fresh(issued, 'probe');
      const leaseId = fresh(issued, 'lease');
      const ref = c.pick(DEPENDENCIES);
      probeTokensOf(issued, ref).push(probeToken);
      issued.leaseIds.push(leaseId);
      const id = requestId(c, issued, issued.admitIds, 'admit');
      return {
        op: 'admit',
        ref,
        breaker: someBreaker(c, terms),
        probeToken,
        rateLimit: c.chance(0.5) ? terms.rateLimit : null,
        cost: c.int(1, 2),
        concurrency: c.chance(0.6) ? terms.concurrency : null,
        leaseId,
        ...(id ? { requestId: id } : {}),
      };
    },
  ],
  [
    2,
    (c, _terms, issued) => ({
      op: 'releaseLease',
      ref: c.pick(DEPENDENCIES),
      leaseId: issued.leaseIds.length > 0 ? c.pick(issued.leaseIds) : 'lease-none',
    }),
  ],
  [
    2,
    (c, _terms, issued) => ({
      op: 'renewLease',
      ref: c.pick(DEPENDENCIES),
      leaseId: issued.leaseIds.length > 0 ? c.pick(issued.leaseIds) : 'lease-none',
      leaseMs: c.int(50, LONGEST.leaseMs),
    }),
  ],
  [
    3,
    (c, terms, issued) => {
      const id = requestId(c, issued, issued.takeIds, 'take');
      const policy = c.chance(0.8) ? terms.rateLimit : { ...terms.rateLimit, burst: c.int(1, 4) };
      return {
        op: 'takeRateLimit',
        ref: { namespace: 'ns1', limit: 'exports', key: c.pick(['u1', 'u2']) },
        policy,
        cost: c.int(1, 3),
        ...(id ? { requestId: id } : {}),
      };
    },
  ],
  [
    2,
    (c) => {
      const kind = c.pick(['trip', 'force_close', 'reset'] as const);
      const duration = c.chance(0.6) ? { durationMs: c.int(100, LONGEST.openMs) } : {};
      const action: BreakerAction =
        kind === 'reset'
          ? { action: 'reset', ...(c.chance(0.5) ? { reason: 'fixed' } : {}) }
          : { action: kind, reason: c.pick(['drill', 'incident']), ...duration };
      return { op: 'setBreaker', ref: c.pick(DEPENDENCIES), action };
    },
  ],
  [1, (c) => ({ op: 'keepForcedListed', ref: c.pick(DEPENDENCIES) })],
  [1, (c) => ({ op: 'reassertBreaker', ref: c.pick(DEPENDENCIES) })],
  [
    3,
    (c, terms) => {
      const by = c.chance(0.8) ? 'caller' : 'operator';
      if (c.chance(0.5))
        return { op: 'registerDependency', ref: c.pick(DEPENDENCIES), cap: 3, retentionMs: HELD_REGISTRATION_MS, by };
      const ref = { namespace: REGISTRY_ONLY.namespace, dependency: c.pick(REGISTRY_ONLY.dependencies) };
      return { op: 'registerDependency', ref, ...terms.registration, by };
    },
  ],
  [
    1,
    (c, terms) => ({
      op: 'registerNamespace',
      namespace: c.pick([...NAMESPACES, REGISTRY_ONLY.namespace]),
      ...terms.registration,
    }),
  ],
  [
    1,
    (c, terms) => {
      const namespace = c.pick([...NAMESPACES, REGISTRY_ONLY.namespace]);
      return { op: 'countDependencies', namespace, retentionMs: registryRetention(namespace, terms) };
    },
  ],
  [
    2,
    (c) => {
      const name = c.pick(['api', 'db', '']);
      const ref: PolicyDocumentRef =
        name === '' ? { kind: 'default', name } : { kind: c.pick(['dep', 'limit'] as const), name };
      const document = c.chance(0.25) ? null : { breaker: { openMs: c.int(1, 9) * 1000 } };
      const condition = c.chance(0.5)
        ? undefined
        : c.chance(0.5)
          ? { ifAbsent: true as const }
          : { ifVersion: c.int(0, 3) };
      return { op: 'writePolicy', namespace: c.pick(NAMESPACES), ref, document, ...(condition ? { condition } : {}) };
    },
  ],
  [
    1,
    (c) => ({
      op: 'appendAudit',
      actor: c.pick(['ops', 'oncall']),
      action: c.pick(['trip', 'reset']),
      namespace: c.pick(NAMESPACES),
      target: 'api',
      reason: c.chance(0.5) ? 'drill' : null,
      ...(c.chance(0.5) ? { durationMs: c.int(1, 9) * 60_000, endsAt: c.int(1, 9) * 1_000_000 } : {}),
    }),
  ],
  [
    5,
    (c, _terms, issued) => {
      const ref = c.pick(IDEMPOTENCY_KEYS);
      const token = fresh(issued, 'tok');
      issued.tokens.set(idemKey(ref), [...(issued.tokens.get(idemKey(ref)) ?? []), token]);
      return {
        op: 'claimIdempotencyKey',
        ref,
        fingerprint: c.chance(0.85) ? 'fp-a' : 'fp-b',
        token,
        ...(c.chance(0.5) ? { claimId: c.pick(['c1', 'c2']) } : {}),
        leaseMs: c.int(100, LONGEST.leaseMs),
        retentionMs: c.int(200, LONGEST.retentionMs),
      };
    },
  ],
  [
    3,
    (c, _terms, issued) => {
      const ref = c.pick(IDEMPOTENCY_KEYS);
      return {
        op: 'completeIdempotencyKey',
        ref,
        token: someToken(c, issued, ref),
        response: JSON.stringify({ status: 201, body: c.int(1, 99) }),
      };
    },
  ],
  [
    2,
    (c, _terms, issued) => {
      const ref = c.pick(IDEMPOTENCY_KEYS);
      return { op: 'releaseIdempotencyKey', ref, token: someToken(c, issued, ref) };
    },
  ],
  [
    6,
    (c, terms) => ({
      op: 'recordDeliveryAttempt',
      ref: c.pick(QUEUES),
      messageId: c.pick(MESSAGES),
      maxAttempts: c.int(1, 3),
      attemptRetentionMs: c.int(200, LONGEST.retentionMs),
      deadLetters: terms.deadLetters,
      ...(c.chance(0.2) ? { attempt: c.int(1, 4) } : {}),
      payload: c.chance(0.8) ? JSON.stringify({ n: c.int(1, 999) }) : null,
      error: c.chance(0.8) ? c.pick(['boom', 'timeout: upstream ü']) : null,
    }),
  ],
  [2, (c) => ({ op: 'ackDelivery', ref: c.pick(QUEUES), messageId: c.pick(MESSAGES) })],
  [
    2,
    (c, terms) => ({
      op: 'listDeadLetters',
      ref: c.pick(QUEUES),
      limit: c.int(1, 3),
      fromCursor: c.chance(0.5),
      retention: terms.deadLetters,
    }),
  ],
  [2, (c) => ({ op: 'redriveDeadLetter', ref: c.pick(QUEUES), messageId: c.pick(MESSAGES) })],
  [1, (c) => ({ op: 'purgeDeadLetter', ref: c.pick(QUEUES), messageId: c.pick(MESSAGES) })],
  [1, () => ({ op: 'readStoreEpochs' })],
  [2, probeCycle],
  [
    2,
    (c, terms) => ({
      op: 'noteDeadLetterQueue',
      ref: { namespace: c.pick(NAMESPACES), queue: c.pick(NOTED_QUEUES) },
      retentionMs: terms.deadLetters.retentionMs,
      maxQueues: c.int(1, 3),
    }),
  ],
  [
    1,
    (c, terms) => ({
      op: 'listDeadLetterQueues',
      namespace: c.pick(NAMESPACES),
      retentionMs: terms.deadLetters.retentionMs,
      limit: c.int(1, 3),
      ...(c.chance(0.3) ? { after: c.pick(NOTED_QUEUES) } : {}),
    }),
  ],
];

/** The retention a namespace's dependencies are registered and listed with. */
const registryRetention = (namespace: string, terms: Terms) =>
  namespace === REGISTRY_ONLY.namespace ? terms.registration.retentionMs : HELD_REGISTRATION_MS;

/**
 * A half-open round: failures from two reporters open the breaker, its open time passes, an
 * admission takes the probe lease, the probe's success gives the lease back (the breaker still
 * half-open while closeAfterSuccesses is 2), and the next admission may take it again.
 */
function probeCycle(c: Chooser, terms: Terms, issued: Issued): Op[] {
  const ref = c.pick(DEPENDENCIES);
  const breaker: BreakerPolicy = { ...terms.breaker, halfOpenProbes: 1, closeAfterSuccesses: 2 };
  const failing = REPORTERS.slice(0, 2).map((reporter) => ({ reporter, failing: true }));
  const admit = (): Op => {
    const probeToken = fresh(issued, 'probe');
    probeTokensOf(issued, ref).push(probeToken);
    const leaseId = fresh(issued, 'lease');
    return { op: 'admit', ref, breaker, probeToken, rateLimit: null, cost: 1, concurrency: null, leaseId };
  };
  const report = (batch: Partial<OutcomeBatch>): Op => ({
    op: 'recordOutcomes',
    ref,
    batch: { reporter: 'pod-1', requests: 0, successes: 0, failures: 0, slow: 0, probes: [], ...batch },
    budgetWindowSeconds: terms.budget.windowSeconds,
    breaker,
  });
  const opened = report({ requests: 10, failures: 10, reporters: failing });
  const first = admit();
  const token = first.op === 'admit' ? first.probeToken : '';
  return [
    opened,
    { op: 'pass', ms: 2 * breaker.openMs + c.int(10, 50) },
    first,
    report({ probes: [{ token, success: true }] }),
    admit(),
  ];
}

/** The latest fencing token handed out for the key, mostly; sometimes an older one or one never handed out. */
function someToken(c: Chooser, issued: Issued, ref: IdempotencyRef): string {
  const tokens = issued.tokens.get(idemKey(ref)) ?? [];
  if (tokens.length === 0 || c.chance(0.1)) return 'tok-unknown';
  return c.chance(0.8) ? tokens[tokens.length - 1] : c.pick(tokens);
}

/**
 * What is read back after an operation, on both sides: the state it may have changed. Reads are
 * operations too (a read settles a lazy breaker, prunes a window), so they run on both sides alike.
 */
function readBack(op: Op, c: Chooser, terms: Terms): Op[] {
  const readDependency = (ref: DependencyRef): Op => ({
    op: 'readDependency',
    ref,
    budget: terms.budget,
    outcomeWindowSeconds: terms.breaker.windowSeconds,
    ...(c.chance(0.5) ? { rateLimit: terms.rateLimit } : {}),
  });
  switch (op.op) {
    case 'recordOutcomes':
      return [readDependency(op.ref), { op: 'readHistory', ref: op.ref }];
    case 'decideRetry':
    case 'decideRetries':
    case 'admit':
    case 'releaseLease':
    case 'renewLease':
    case 'setBreaker':
    case 'reassertBreaker':
      return [readDependency(op.ref)];
    case 'keepForcedListed':
    case 'registerDependency':
      return [
        {
          op: 'listDependencies',
          namespace: op.ref.namespace,
          retentionMs: registryRetention(op.ref.namespace, terms),
        },
      ];
    case 'registerNamespace':
      return [{ op: 'listNamespaces', retentionMs: terms.registration.retentionMs }];
    case 'writePolicy':
      return [{ op: 'readPolicies', namespace: op.namespace }];
    case 'appendAudit':
      return [{ op: 'readAudit', ...(c.chance(0.5) ? { namespace: op.namespace } : {}), limit: c.int(1, 5) }];
    case 'claimIdempotencyKey':
    case 'completeIdempotencyKey':
    case 'releaseIdempotencyKey':
      return [{ op: 'readIdempotencyKey', ref: op.ref }];
    case 'recordDeliveryAttempt':
    case 'ackDelivery':
    case 'redriveDeadLetter':
    case 'purgeDeadLetter':
      return [{ op: 'countDeadLetters', ref: op.ref, retention: terms.deadLetters }];
    case 'noteDeadLetterQueue':
      return [
        {
          op: 'listDeadLetterQueues',
          namespace: op.ref.namespace,
          retentionMs: op.retentionMs,
          limit: c.int(1, 4),
        },
      ];
    case 'pass':
      // Time passed: what lapsed shows in a read of something.
      return [readDependency(c.pick(DEPENDENCIES)), { op: 'readIdempotencyKey', ref: c.pick(IDEMPOTENCY_KEYS) }];
    default:
      return [];
  }
}

/** A seed's run: `steps` operations, each followed by the reads of what it may have changed. */
export function generateRun(random: RandomSource, steps: number): Op[] {
  const c = new Chooser(random);
  const terms = randomTerms(c);
  const issued: Issued = {
    probeTokens: new Map(),
    leaseIds: [],
    retryIds: new Map(),
    admitIds: [],
    takeIds: [],
    tokens: new Map(),
    count: 0,
  };
  const total = GENERATORS.reduce((sum, [weight]) => sum + weight, 0);
  const ops: Op[] = [];
  for (let i = 0; i < steps; i++) {
    let roll = c.random() * total;
    const [, generate] = GENERATORS.find(([weight]) => (roll -= weight) < 0) ?? GENERATORS[0];
    for (const op of [generate(c, terms, issued)].flat()) ops.push(op, ...readBack(op, c, terms));
  }
  return ops;
}

/** The operations a run may generate, for the check that every Store operation is driven. */
export const GENERATED_OPS: ReadonlySet<OpName> = new Set<OpName>([
  'decideRetry',
  'decideRetries',
  'recordOutcomes',
  'admit',
  'releaseLease',
  'renewLease',
  'takeRateLimit',
  'setBreaker',
  'keepForcedListed',
  'reassertBreaker',
  'readDependency',
  'registerDependency',
  'listDependencies',
  'countDependencies',
  'registerNamespace',
  'listNamespaces',
  'writePolicy',
  'readPolicies',
  'appendAudit',
  'readAudit',
  'claimIdempotencyKey',
  'completeIdempotencyKey',
  'releaseIdempotencyKey',
  'readIdempotencyKey',
  'recordDeliveryAttempt',
  'ackDelivery',
  'listDeadLetters',
  'redriveDeadLetter',
  'purgeDeadLetter',
  'countDeadLetters',
  'noteDeadLetterQueue',
  'listDeadLetterQueues',
  'readHistory',
  'readStoreEpochs',
]);
