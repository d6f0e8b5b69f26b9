import { systemClock, type Clock, type RandomSource } from '@sluice/core';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import { hostname } from 'node:os';
import { processClock } from './coarse-clock';
import { FleetDecider } from './decide/fleet-decider';
import { InsuredDecider } from './decide/insured-decider';
import { LocalDecider } from './decide/local-decider';
import { Dependency } from './dependency';
import { isConfigError, type ConfigError } from './errors';
import type { Event } from './events';
import { fetchThrough, type SluiceFetchInit } from './fetch';
import { BreakerFeed } from './fleet/breaker-feed';
import {
  CoordinatorLink,
  FAILURES_BEFORE_FALLBACK,
  consoleLogger,
  silentLogger,
  type ConfigErrorEvent,
  type FallbackChange,
  type SluiceLogger,
} from './fleet/coordinator-link';
import { FleetDependency, type BreakerChange } from './fleet/fleet-dependency';
import { LeaseKeeper } from './fleet/leases';
import { Reporter } from './fleet/reporter';
import {
  DEPENDENCY_DEFAULTS,
  positiveInteger,
  resolveDependencyOptions,
  type DependencyOptions,
  type FallbackMode,
  type ResolvedDependencyOptions,
  type SluiceOptions,
} from './options';
import { PolicyEvents } from './policy-events';
import type { SluiceRuntime } from './runtime';
import { CoordinatorTransport } from './transport/coordinator-transport';
import { TimeoutWatch } from './timeout-watch';
import { Agents } from './transport/http';

/** Reported counts older than this are dropped instead of sent late. */
const MAX_REPORT_AGE_MS = 10_000;

/**
 * Where the client's decisions come from now, from {@link Sluice.status}.
 * @example
 * app.get('/health', (_req, res) => res.json({ sluice: sluice.status() }));
 */
export interface SluiceStatus {
  /**
   * `fleet`: the coordinator decides; `fallback`: it cannot answer and the local fallback decides;
   * `config_error`: it refuses this client's token (see `configError`).
   */
  mode: 'fleet' | 'fallback' | 'config_error';
  /** True while the local fallback decides (as {@link Sluice.fallbackActive}). */
  fallbackActive: boolean;
  /** The coordinator's refusal of the token (401/403), while it stands. */
  configError: ConfigError | undefined;
  /** True while the event stream of breaker states is open. */
  streaming: boolean;
}

/**
 * The Sluice client: one per process, shared by every dependency. It keeps each dependency's fleet
 * breaker state current over one event stream, batches outcomes into one report every ~200 ms,
 * asks the coordinator before every retry (and before every attempt to a dependency whose policy
 * has a rate or concurrency limit, holding the lease it grants), and falls back to a local budget,
 * breaker and limits when the coordinator cannot answer.
 * @example
 * import { Sluice } from '@sluice/client';
 * const sluice = new Sluice({ baseUrls: ['http://sluice:8080'], token: process.env.SLUICE_TOKEN, namespace: 'shop' });
 * const payments = sluice.dependency('payments-api');
 * const res = await payments.fetch('http://payments/charges/42');
 * await sluice.close();
 */
export class Sluice extends PolicyEvents {
  private readonly fleet = new Map<string, FleetDependency>();
  private readonly policies = new Map<string, Dependency>();
  private readonly transport: CoordinatorTransport;
  private readonly link: CoordinatorLink;
  private readonly reporter: Reporter;
  private readonly feed: BreakerFeed;
  private readonly leases: LeaseKeeper;
  private readonly runtime: SluiceRuntime;
  private readonly defaults: ResolvedDependencyOptions;
  private readonly fallbackShare: number | undefined;
  private readonly requestTimeoutMs: number;
  private readonly reporterName: string;
  /** The verification under way (`ready()`), or the one that succeeded. */
  private verification: Promise<void> | undefined;
  /** With `verify: true`: the verification started with the client, until it ends (calls wait for it). */
  private firstVerification: Promise<void> | undefined;
  private closed = false;

  /**
   * When the SDK switches to its local fallback (`active: true`) and back (`active: false`).
   * @example
   * sluice.onFallback(({ active, during }) => metrics.fallback.set(active ? 1 : 0));
   */
  readonly onFallback: Event<FallbackChange>;

  /**
   * When the coordinator refuses this client's token (401 or 403): a configuration error, not an
   * outage, so the SDK does not switch to its fallback. Emitted when the refusal starts, and again
   * if it changes or starts anew after the token was accepted in between.
   * @example
   * sluice.onConfigError(({ error }) => alerts.page(`Sluice refuses our token: ${error.message}`));
   */
  readonly onConfigError: Event<ConfigErrorEvent>;

  /**
   * @example
   * const sluice = new Sluice({ baseUrls: 'http://127.0.0.1:8080', namespace: 'shop', fallback: 'local' });
   * @example
   * // Insist on a valid token: calls fail with the ConfigError while the coordinator refuses it.
   * const strict = new Sluice({ baseUrls: 'http://sluice:8080', namespace: 'shop', token, verify: true });
   */
  constructor(options: SluiceOptions) {
    super();
    if (!RESOURCE_NAME_PATTERN.test(options.namespace)) {
      throw new TypeError(`namespace must match ${RESOURCE_NAME_PATTERN.source}, got "${options.namespace}"`);
    }
    const baseUrls = Array.isArray(options.baseUrls) ? options.baseUrls : [options.baseUrls];
    if (baseUrls.length === 0) throw new TypeError('baseUrls needs at least one coordinator URL');
    baseUrls.forEach(checkBaseUrl);
    // The system clock, read coarsely: most readings are shared by calls within one millisecond.
    const clock: Clock = options.clock ?? processClock;
    const random: RandomSource = options.random ?? Math.random;
    const logger: SluiceLogger = options.logger === false ? silentLogger : (options.logger ?? consoleLogger);
    this.defaults = resolveDependencyOptions(DEPENDENCY_DEFAULTS, options.defaults);
    const fallbackMode: FallbackMode = options.fallback ?? 'local';
    this.fallbackShare = options.fallbackShare;
    if (this.fallbackShare !== undefined && !(this.fallbackShare > 0 && this.fallbackShare <= 1)) {
      throw new TypeError('fallbackShare must be in (0, 1]');
    }
    const decisionTimeoutMs = options.decisionTimeoutMs ?? 50;
    const requestTimeoutMs = options.requestTimeoutMs ?? 1000;
    this.requestTimeoutMs = requestTimeoutMs;
    const reportIntervalMs = options.reportIntervalMs ?? 200;
    positiveInteger('decisionTimeoutMs', decisionTimeoutMs, 1, 60_000);
    positiveInteger('requestTimeoutMs', requestTimeoutMs, 1, 60_000);
    positiveInteger('reportIntervalMs', reportIntervalMs, 1, 60_000);
    this.reporterName = options.reporter ?? defaultReporter();

    const agents = new Agents();
    const failuresBeforeFallback = options.failuresBeforeFallback ?? FAILURES_BEFORE_FALLBACK;
    positiveInteger('failuresBeforeFallback', failuresBeforeFallback, 1, 100);
    this.link = new CoordinatorLink(logger, fallbackMode, failuresBeforeFallback, () => clock.now());
    this.onFallback = this.link.changes.event;
    this.onConfigError = this.link.configErrors.event;
    this.link.changes.event(({ active }) => {
      if (active) for (const dependency of this.fleet.values()) dependency.fallbackStarts(clock.now());
    });
    this.transport = new CoordinatorTransport({
      baseUrls,
      token: options.token,
      namespace: options.namespace,
      agents,
      connectTimeoutMs: options.coordinatorConnectTimeoutMs ?? 100,
    });
    this.reporter = new Reporter(() => this.fleet.values(), this.transport, this.link, clock, {
      reporter: this.reporterName,
      intervalMs: reportIntervalMs,
      timeoutMs: requestTimeoutMs,
      maxAgeMs: MAX_REPORT_AGE_MS,
    });
    this.feed = new BreakerFeed(this.fleet, this.transport, this.link, clock, random, {
      sse: options.sse ?? true,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      viewRefreshMs: options.viewRefreshMs ?? 5000,
      idleTimeoutMs: options.streamIdleTimeoutMs ?? 45_000,
      timeoutMs: requestTimeoutMs,
    });
    const timeouts = new TimeoutWatch();
    this.leases = new LeaseKeeper(this.transport, this.link, timeouts, requestTimeoutMs);
    const fleetDecider = new FleetDecider(
      this.transport,
      this.link,
      this.leases,
      clock,
      {
        decisionTimeoutMs,
        requestTimeoutMs,
      },
      { coalesce: options.coalesceRetryAsks ?? true },
    );
    const localDecider = new LocalDecider(fallbackMode, this.link, this.leases, clock, random, logger);
    this.runtime = {
      clock,
      realClock: options.clock === undefined || options.clock === systemClock,
      random,
      agents,
      timeouts,
      leases: this.leases,
      decider: new InsuredDecider(fleetDecider, localDecider, this.link, clock),
      beforeCall: options.verify ? () => this.verified() : undefined,
      firstView: (dependency, maxWaitMs) => this.firstView(dependency, maxWaitMs),
      reportProbe: (dependency, token, success) => {
        dependency.recordProbe(clock.now(), { token, success });
        void this.reporter.flush();
      },
    };
    if (options.verify) {
      const first = this.ready().catch((error: unknown) => {
        if (isConfigError(error)) throw error;
      });
      first.catch(() => undefined).finally(() => (this.firstVerification = undefined));
      this.firstVerification = first;
    }
    this.reporter.start();
    this.feed.start();
  }

  /**
   * A dependency's policy. Without options the same instance is returned for a name; with options a
   * new policy is made over the same fleet state (breaker, reports, fallback): make those once, at
   * start-up, not per call.
   * @example
   * const payments = sluice.dependency('payments-api', { maxAttempts: 2, deadlineMs: 1500 });
   * const search = sluice.dependency('search', { idempotent: true, hedge: { delayMs: 'p95' } });
   */
  dependency(name: string, options?: DependencyOptions): Dependency {
    if (this.closed) throw new Error('this Sluice client is closed');
    if (options === undefined) {
      const existing = this.policies.get(name);
      if (existing) return existing;
    }
    if (!RESOURCE_NAME_PATTERN.test(name)) {
      throw new TypeError(`a dependency name must match ${RESOURCE_NAME_PATTERN.source}, got "${name}"`);
    }
    const resolved = resolveDependencyOptions(this.defaults, options);
    let fleet = this.fleet.get(name);
    if (!fleet) {
      fleet = new FleetDependency(name, resolved.fallbackPolicy, this.fallbackShare);
      this.fleet.set(name, fleet);
      fleet.changes.event((change) => this.forwardChange(change));
      this.feed.follow(fleet);
    } else if (options?.fallbackPolicy) {
      fleet.fallbackOverride = options.fallbackPolicy;
    }
    const policy = new Dependency(name, resolved, fleet, this.runtime, { retry: this.retries, giveUp: this.giveUps });
    if (options === undefined) this.policies.set(name, policy);
    return policy;
  }

  /**
   * `fetch` through a dependency's policy (see {@link Dependency.fetch}).
   * @example
   * const res = await sluice.fetch('inventory', `http://inventory/items/${sku}`);
   * const created = await sluice.fetch('payments-api', 'http://payments/charges', { method: 'POST', body, idempotencyKey: true });
   */
  fetch(dependency: string | Dependency, input: string | URL, init?: SluiceFetchInit): Promise<Response> {
    const policy = typeof dependency === 'string' ? this.dependency(dependency) : dependency;
    return fetchThrough(policy, this.runtime.agents, input, init);
  }

  /**
   * True while the coordinator cannot answer and the local fallback decides.
   * @example
   * app.get('/health', (_req, res) => res.json({ sluice: sluice.fallbackActive ? 'fallback' : 'fleet' }));
   */
  get fallbackActive(): boolean {
    return this.link.fallback;
  }

  /**
   * Where decisions come from now: the fleet, the local fallback, or nowhere because the
   * coordinator refuses the token (`config_error`, with the {@link ConfigError}).
   * @example
   * const { mode, configError } = sluice.status();
   * if (mode === 'config_error') console.error(`Sluice: ${configError?.message}`);
   */
  status(): SluiceStatus {
    const { configError, fallback } = this.link;
    return {
      mode: configError ? 'config_error' : fallback ? 'fallback' : 'fleet',
      fallbackActive: fallback,
      configError,
      streaming: this.feed.connected,
    };
  }

  /**
   * Checks the token with the coordinator (an empty report: it changes nothing). Resolves once the
   * coordinator accepted it; rejects with a {@link ConfigError} (its message names the 401 or 403
   * and the coordinator's own message) when it refuses it, or with a
   * {@link CoordinatorUnavailableError} when it cannot be reached within `requestTimeoutMs`.
   * Call it at start-up to fail fast on a wrong token; a success is remembered, a failure is not.
   * @example
   * const sluice = new Sluice({ baseUrls: ['http://sluice:8080'], namespace: 'shop', token: process.env.SLUICE_TOKEN });
   * await sluice.ready(); // throws "the coordinator answered 401 unauthorized: unknown token" on a wrong token
   */
  ready(): Promise<void> {
    if (!this.verification) {
      const verification = this.verify();
      this.verification = verification;
      verification.catch(() => {
        if (this.verification === verification) this.verification = undefined;
      });
    }
    return this.verification;
  }

  /**
   * Sends the pending report now, and waits for the concurrency leases' releases and renewals under
   * way (each bounded by `requestTimeoutMs`).
   * @example
   * await sluice.flush();
   */
  async flush(): Promise<void> {
    await Promise.all([this.reporter.flush(), this.leases.settled()]);
  }

  /**
   * Stops the event stream and timers, sends the last report and waits for the concurrency leases'
   * releases under way. Call it on shutdown.
   * @example
   * process.on('SIGTERM', () => void sluice.close());
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reporter.stop();
    this.feed.close();
    await this.flush();
    this.runtime.agents.destroy();
  }

  private forwardChange(change: BreakerChange): void {
    if ((change.source === 'local') === this.runtime.decider.governedLocally) this.breakerChanged(change);
  }

  private async verify(): Promise<void> {
    try {
      await this.transport.report({ reporter: this.reporterName, deps: [] }, this.requestTimeoutMs);
      this.link.succeeded('ready');
    } catch (error) {
      this.link.failed('ready', error);
      throw error;
    }
  }

  /**
   * Before a call of a client made with `verify: true`: fails with the ConfigError while the
   * coordinator refuses the token; waits for the verification under way. A coordinator that cannot
   * be reached is no reason to fail: the fallback is there for that.
   */
  private async verified(): Promise<void> {
    if (this.firstVerification) await this.firstVerification;
    if (this.link.configError) throw this.link.configError;
  }

  /**
   * Waits for the first view of a dependency while it is under way (it brings the limits): until the
   * read ends, at most `maxWaitMs` and the read's own timeout.
   */
  private firstView(dependency: FleetDependency, maxWaitMs: number): Promise<void> {
    const pending = dependency.firstView;
    if (!pending || maxWaitMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.min(maxWaitMs, this.requestTimeoutMs));
      void pending.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** `host-pid`, in the characters a reporter name may use. */
function defaultReporter(): string {
  return `${hostname()}-${process.pid}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128);
}

/** A coordinator's base URL: http:// or https://, parseable; the error names the option and the value. */
function checkBaseUrl(url: string, index: number): void {
  const problem = !/^https?:\/\//i.test(url)
    ? 'must start with http:// or https://'
    : URL.canParse(url)
      ? null
      : 'is not a URL';
  if (problem) throw new TypeError(`baseUrls[${index}] ${problem}, e.g. http://127.0.0.1:8080; got "${url}"`);
}
