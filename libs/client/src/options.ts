import type { Clock, RandomSource } from '@sluice/core';
import { MAX_DURATION_MS, type DependencyPolicyOverride } from '@sluice/protocol';
import type { Classifier } from './classification';
import type { SluiceLogger } from './fleet/coordinator-link';

/**
 * What the SDK does while the coordinator cannot answer:
 * - `local` (default): a local retry budget and circuit breaker (libs/core), per process; a
 *   dependency's rate and concurrency limits are kept locally too, scaled by this process's share of the fleet;
 * - `fail-open`: retries are allowed up to `maxAttempts` with backoff, no budget, no breaker; calls
 *   to a rate- or concurrency-limited dependency go out unchecked (one log line per dependency says so);
 * - `fail-closed`: no retries at all (first attempts still go out), and calls to a rate- or
 *   concurrency-limited dependency are refused (`GiveUpError`, reason `coordinator_unavailable`).
 * @example
 * new Sluice({ baseUrls: ['http://sluice:8080'], namespace: 'shop', fallback: 'fail-open' });
 */
export type FallbackMode = 'local' | 'fail-open' | 'fail-closed';

/**
 * What `execute` does when a dependency's rate or concurrency limit refuses a call:
 * - `wait` (default): wait and ask again, as long as the wait ends before the deadline: the rate
 *   limit's exact `retryAfterMs`; for a concurrency limit, a jittered backoff (the policy's) capped
 *   by `retryAfterMs`, since slots are usually released long before a lease expires. A refusal
 *   sends nothing, so it counts neither as an attempt (`maxAttempts`) nor against the retry budget.
 *   When the wait would not end before the deadline, a {@link LimitedError} at once.
 * - `fail`: a {@link LimitedError} at once.
 * @example
 * sluice.dependency('geocoder', { whenLimited: 'fail' }); // let the caller decide, e.g. answer 429
 */
export type WhenLimited = 'wait' | 'fail';

/**
 * Hedging for idempotent reads: when the first attempt has not answered after `delayMs` (or the
 * fleet's p95 latency, when the coordinator serves one), a second attempt goes out; the first
 * answer wins and the other is aborted. A hedge is a retry for the budget.
 * @example
 * sluice.dependency('search', { idempotent: true, hedge: { delayMs: 'p95', fallbackDelayMs: 80 } });
 */
export interface HedgeOptions {
  /** A fixed delay in ms, or `'p95'`: the fleet's p95 latency of the dependency. */
  delayMs: number | 'p95';
  /** The delay while the fleet serves no p95 (default 100 ms). */
  fallbackDelayMs?: number;
}

/**
 * Bounds of `timeoutMs: 'auto'`: about 2 × the fleet's p99 latency, clamped to [minMs, maxMs];
 * `maxMs` while the coordinator serves no p99.
 * @example
 * sluice.dependency('reports', { timeoutMs: 'auto', autoTimeout: { minMs: 200, maxMs: 5000 } });
 */
export interface AutoTimeoutBounds {
  minMs: number;
  maxMs: number;
}

/**
 * Options of one dependency's policy. Every field has a safe default.
 * @example
 * const payments = sluice.dependency('payments-api', {
 *   maxAttempts: 3,
 *   deadlineMs: 2000,
 *   timeoutMs: 'auto',
 *   connectTimeoutMs: 100,
 * });
 */
export interface DependencyOptions {
  /** Attempts per call, the first included (default 3). The coordinator's policy may allow fewer. */
  maxAttempts?: number;
  /** Deadline of a whole call, retries and backoff included, in ms (default 10 000). A request's incoming deadline shortens it. */
  deadlineMs?: number;
  /** Per-attempt timeout in ms, or `'auto'` (default): about 2 × the fleet p99, within `autoTimeout`. */
  timeoutMs?: number | 'auto';
  /** Bounds of the automatic timeout (default 100 ms to 3 000 ms). */
  autoTimeout?: AutoTimeoutBounds;
  /** Longest a connection may take to open, for `fetch` (default 100 ms). */
  connectTimeoutMs?: number;
  /** Whether calls are idempotent by default (default false; `fetch` decides by method). */
  idempotent?: boolean;
  /** Hedging for idempotent calls (default off). */
  hedge?: HedgeOptions | false;
  /**
   * Retry even while serving a request that is itself a retry (`sluice-attempt` > 1). Default false:
   * the retry is left to the caller, so retries do not multiply across layers.
   */
  retryWhenServingRetry?: boolean;
  /** Classifiers tried before the built-in one (gRPC: {@link grpcClassifier}). */
  classify?: Classifier | Classifier[];
  /** The local fallback's policy: omitted fields come from the coordinator's policy when known, else the defaults. */
  fallbackPolicy?: DependencyPolicyOverride;
  /** When the dependency's rate or concurrency limit refuses a call: `wait` within the deadline (default) or `fail` at once. */
  whenLimited?: WhenLimited;
}

/**
 * Options of a {@link Sluice} client.
 * @example
 * const sluice = new Sluice({
 *   baseUrls: ['http://sluice-0:8080', 'http://sluice-1:8080'],
 *   token: process.env.SLUICE_TOKEN,
 *   namespace: 'shop',
 * });
 */
export interface SluiceOptions {
  /**
   * The coordinator's base URLs; the next one is tried when one does not answer, and a request one
   * of them sheds (503 `overloaded`) is asked of the next at once.
   */
  baseUrls: string | string[];
  /** A bearer token with the `client` role on `namespace`. */
  token?: string | undefined;
  namespace: string;
  /** This process's name in reports (default: host name and pid). */
  reporter?: string;
  /** Defaults for every dependency. */
  defaults?: DependencyOptions;
  /** How often outcomes are reported, in ms (default 200). */
  reportIntervalMs?: number;
  /**
   * How long a call waits for the coordinator's answer to a retry or admit ask, in ms (default 50),
   * from when the ask goes out (a coalesced retry ask may first wait in this process: for the ask
   * under way for its dependency, the coalescing window, a busy event loop; that wait is the call's,
   * within its deadline, and the ask carries the deadline it has left). A later answer still
   * counts as the coordinator answering: only a request that fails, or gets no answer within
   * `requestTimeoutMs`, counts toward the switch to the fallback (a 503 `overloaded` never does).
   * A decision that got no answer is asked again, with the same `requestId`, only within this time.
   */
  decisionTimeoutMs?: number;
  /**
   * Coalesce retry asks (default true): the asks this process makes within a millisecond or so
   * (never past the smallest deadline among them) go out as one `POST /retries`, and after a
   * `budget_exhausted` or `breaker_open` denial that says when to ask again (`retryAfterMs`), the
   * same denial is given locally, without a request, until then or until the next report reached
   * the coordinator. Such a denial ends a call as the coordinator's would (`GiveUpError` with reason
   * `budget_exhausted`, `BreakerOpenError`), in the events like any other. False asks the coordinator once per retry, every time.
   * @example
   * const perCall = new Sluice({ baseUrls: 'http://sluice:8080', namespace: 'shop', coalesceRetryAsks: false });
   */
  coalesceRetryAsks?: boolean;
  /**
   * Timeout of reports, view reads and the decisions' requests themselves, in ms (default 1000):
   * every exchange of one request, re-asks included, ends within it.
   */
  requestTimeoutMs?: number;
  /** Connect timeout towards the coordinator, in ms (default 100). */
  coordinatorConnectTimeoutMs?: number;
  /** Breaker states pushed over Server-Sent Events (default true); false polls only. */
  sse?: boolean;
  /** Poll interval while the event stream is down, in ms (default 1000). */
  pollIntervalMs?: number;
  /** How often a dependency's view (policy, latency) is re-read, in ms (default 5000). */
  viewRefreshMs?: number;
  /** Reopen an event stream silent for this long, in ms (default 45 000). */
  streamIdleTimeoutMs?: number;
  /** What to do while the coordinator cannot answer (default `local`). */
  fallback?: FallbackMode;
  /**
   * This process's share of the fleet (0–1], scaling the local fallback's budget floor and limits.
   * By default it is learned per dependency: 1 / the reporters the coordinator counted in the budget
   * window (each report's answer says), and 1 until the first answer.
   */
  fallbackShare?: number;
  /**
   * Failed exchanges in a row with the coordinator before the fallback takes over (default 3).
   * Before that, a retry whose decision failed is not made: a slow coordinator never lets the
   * fleet's budget leak through every client's local one.
   */
  failuresBeforeFallback?: number;
  /**
   * Verify the token at start-up (default false): the client checks it with the coordinator at
   * once (see {@link Sluice.ready}), calls wait for that check, and while the coordinator refuses
   * the token (401/403) every call fails with the {@link ConfigError}, without calling the
   * dependency. Without it, calls go on meanwhile with nothing the fleet must grant (no retry, no
   * hedge, no call to a half-open or limited dependency: each gives up with reason `config_error`).
   * A coordinator that cannot be reached fails no call either way: the fallback decides.
   */
  verify?: boolean;
  /** Where the SDK's log lines go (default the console); false for none. */
  logger?: SluiceLogger | false;
  /** For tests: the clock deadlines and windows are measured on (default: the system clock, read at most once per millisecond and per 128 readings, one reading for the whole process and its request contexts). */
  clock?: Clock;
  /** For tests: the random source of jitter. */
  random?: RandomSource;
}

/** Every dependency option, resolved. */
export interface ResolvedDependencyOptions {
  maxAttempts: number;
  deadlineMs: number;
  timeoutMs: number | 'auto';
  autoTimeout: AutoTimeoutBounds;
  connectTimeoutMs: number;
  idempotent: boolean;
  hedge: HedgeOptions | false;
  retryWhenServingRetry: boolean;
  classifiers: Classifier[];
  fallbackPolicy: DependencyPolicyOverride | undefined;
  whenLimited: WhenLimited;
}

export const DEPENDENCY_DEFAULTS: Readonly<ResolvedDependencyOptions> = Object.freeze({
  maxAttempts: 3,
  deadlineMs: 10_000,
  timeoutMs: 'auto',
  autoTimeout: { minMs: 100, maxMs: 3000 },
  connectTimeoutMs: 100,
  idempotent: false,
  hedge: false,
  retryWhenServingRetry: false,
  classifiers: [],
  fallbackPolicy: undefined,
  whenLimited: 'wait',
} as ResolvedDependencyOptions);

/** Lays `options` over `base`, checking every number. */
export function resolveDependencyOptions(
  base: ResolvedDependencyOptions,
  options: DependencyOptions | undefined,
): ResolvedDependencyOptions {
  if (!options) return base;
  const resolved: ResolvedDependencyOptions = {
    maxAttempts: options.maxAttempts ?? base.maxAttempts,
    deadlineMs: options.deadlineMs ?? base.deadlineMs,
    timeoutMs: options.timeoutMs ?? base.timeoutMs,
    autoTimeout: { ...base.autoTimeout, ...options.autoTimeout },
    connectTimeoutMs: options.connectTimeoutMs ?? base.connectTimeoutMs,
    idempotent: options.idempotent ?? base.idempotent,
    hedge: options.hedge ?? base.hedge,
    retryWhenServingRetry: options.retryWhenServingRetry ?? base.retryWhenServingRetry,
    classifiers:
      options.classify === undefined
        ? base.classifiers
        : Array.isArray(options.classify)
          ? options.classify
          : [options.classify],
    fallbackPolicy: options.fallbackPolicy ?? base.fallbackPolicy,
    whenLimited: options.whenLimited ?? base.whenLimited,
  };
  if (resolved.whenLimited !== 'wait' && resolved.whenLimited !== 'fail') {
    throw new TypeError(`whenLimited must be 'wait' or 'fail', got ${String(resolved.whenLimited)}`);
  }
  positiveInteger('maxAttempts', resolved.maxAttempts, 1, 100);
  positiveInteger('deadlineMs', resolved.deadlineMs, 1, MAX_DURATION_MS);
  if (resolved.timeoutMs !== 'auto') positiveInteger('timeoutMs', resolved.timeoutMs, 1, MAX_DURATION_MS);
  positiveInteger('autoTimeout.minMs', resolved.autoTimeout.minMs, 1, MAX_DURATION_MS);
  positiveInteger('autoTimeout.maxMs', resolved.autoTimeout.maxMs, resolved.autoTimeout.minMs, MAX_DURATION_MS);
  positiveInteger('connectTimeoutMs', resolved.connectTimeoutMs, 1, MAX_DURATION_MS);
  if (resolved.hedge) {
    if (resolved.hedge.delayMs !== 'p95') positiveInteger('hedge.delayMs', resolved.hedge.delayMs, 0, MAX_DURATION_MS);
    if (resolved.hedge.fallbackDelayMs !== undefined) {
      positiveInteger('hedge.fallbackDelayMs', resolved.hedge.fallbackDelayMs, 0, MAX_DURATION_MS);
    }
  }
  return resolved;
}

/** Throws a TypeError naming `name` unless `value` is an integer in [min, max]. */
export function positiveInteger(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
}
