/** Policy documents as stored and served by the admin API (docs/api.md, Policy documents). */

import { MAX_IDEMPOTENCY_RETENTION_SECONDS } from './bounds';

export const POLICY_MODES = ['enforce', 'shadow'] as const;
export type PolicyMode = (typeof POLICY_MODES)[number];
export const JITTER_KINDS = ['full', 'decorrelated', 'none'] as const;
/**
 * How a retry budget counts: `fixed` grants while `retries < limit`; `adaptive` also gives back the
 * grant of each retry that succeeded (reported as `retriesSucceeded`), under the cap `maxRatio` sets.
 */
export const BUDGET_MODES = ['adaptive', 'fixed'] as const;
export type BudgetMode = (typeof BUDGET_MODES)[number];
export type JitterKind = (typeof JITTER_KINDS)[number];

export interface RetryBudgetPolicy {
  /** Absent: `adaptive`. */
  mode?: BudgetMode;
  ratio: number;
  /**
   * Adaptive only: the cap is `floor(maxRatio × requests + minRetriesPerSecond × windowSeconds)`,
   * the most retries the window holds however many succeed. Absent: 0.5; never below `ratio`.
   */
  maxRatio?: number;
  minRetriesPerSecond: number;
  windowSeconds: number;
  maxAttempts: number;
}

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  jitter: JitterKind;
}

export interface BreakerPolicy {
  failureRateThreshold: number;
  slowCallRateThreshold: number;
  slowCallMs: number;
  minimumCalls: number;
  windowSeconds: number;
  openMs: number;
  maxOpenMs: number;
  halfOpenProbes: number;
  closeAfterSuccesses: number;
  probeLeaseMs: number;
  minReporters: number;
}

export interface RateLimitPolicy {
  rate: number;
  periodMs: number;
  burst: number;
}

/** A named limit's document: a rate limit, enforced or only counted (shadow). */
export interface NamedLimitPolicy extends RateLimitPolicy {
  mode?: PolicyMode;
}

export interface ConcurrencyPolicy {
  limit: number;
  leaseMs: number;
}

export interface DependencyPolicy {
  mode: PolicyMode;
  retryBudget: RetryBudgetPolicy;
  backoff: BackoffPolicy;
  breaker: BreakerPolicy;
  rateLimit: RateLimitPolicy | null;
  concurrency: ConcurrencyPolicy | null;
}

/** A partial policy: any omitted field takes the default. */
export type DependencyPolicyOverride = {
  mode?: PolicyMode;
  retryBudget?: Partial<RetryBudgetPolicy>;
  backoff?: Partial<BackoffPolicy>;
  breaker?: Partial<BreakerPolicy>;
  rateLimit?: RateLimitPolicy | null;
  concurrency?: ConcurrencyPolicy | null;
};

export const DEFAULT_DEPENDENCY_POLICY: Readonly<DependencyPolicy> = Object.freeze({
  mode: 'enforce',
  retryBudget: {
    mode: 'adaptive',
    ratio: 0.1,
    maxRatio: 0.5,
    minRetriesPerSecond: 10,
    windowSeconds: 10,
    maxAttempts: 3,
  },
  backoff: { baseMs: 50, capMs: 2000, jitter: 'full' },
  breaker: {
    failureRateThreshold: 0.5,
    slowCallRateThreshold: 1.0,
    slowCallMs: 1000,
    minimumCalls: 20,
    windowSeconds: 10,
    openMs: 30000,
    maxOpenMs: 300000,
    halfOpenProbes: 1,
    closeAfterSuccesses: 3,
    probeLeaseMs: 10000,
    minReporters: 1,
  },
  rateLimit: null,
  concurrency: null,
} as DependencyPolicy);

/** Overlays `override` on `base`, section by section. */
export function mergeDependencyPolicy(
  base: DependencyPolicy,
  override: DependencyPolicyOverride | undefined,
): DependencyPolicy {
  if (!override) return base;
  return {
    mode: override.mode ?? base.mode,
    retryBudget: retryBudgetWithCap({ ...base.retryBudget, ...override.retryBudget }),
    backoff: { ...base.backoff, ...override.backoff },
    breaker: { ...base.breaker, ...override.breaker },
    rateLimit: override.rateLimit === undefined ? base.rateLimit : override.rateLimit,
    concurrency: override.concurrency === undefined ? base.concurrency : override.concurrency,
  };
}

/** The budget with its `maxRatio` raised to its `ratio` where an overlay left it below. */
function retryBudgetWithCap(budget: RetryBudgetPolicy): RetryBudgetPolicy {
  const { ratio, maxRatio } = budget;
  return maxRatio !== undefined && maxRatio < ratio ? { ...budget, maxRatio: ratio } : budget;
}

/** A queue's policy document (docs/api.md, Policy documents): attempts before dead-lettering, and backoff. */
export interface QueuePolicy {
  /** Every delivery counts, the first included: the failure of attempt `maxAttempts` parks the message. */
  maxAttempts: number;
  backoff: BackoffPolicy;
}

/** A partial queue policy: any omitted field takes the default. */
export type QueuePolicyOverride = {
  maxAttempts?: number;
  backoff?: Partial<BackoffPolicy>;
};

export const DEFAULT_QUEUE_POLICY: Readonly<QueuePolicy> = Object.freeze({
  maxAttempts: 5,
  backoff: { baseMs: 1000, capMs: 60000, jitter: 'full' },
} as QueuePolicy);

/** Overlays `override` on `base`. */
export function mergeQueuePolicy(base: QueuePolicy, override: QueuePolicyOverride | undefined): QueuePolicy {
  if (!override) return base;
  return {
    maxAttempts: override.maxAttempts ?? base.maxAttempts,
    backoff: { ...base.backoff, ...override.backoff },
  };
}

/** How long a namespace keeps idempotency keys: the default, and the most a claim may ask for. */
export interface IdempotencyPolicy {
  retentionSeconds: number;
  maxRetentionSeconds: number;
}

export const DEFAULT_IDEMPOTENCY_POLICY: Readonly<IdempotencyPolicy> = Object.freeze({
  retentionSeconds: 86_400,
  maxRetentionSeconds: MAX_IDEMPOTENCY_RETENTION_SECONDS,
});
