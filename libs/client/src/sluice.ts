import { backoffDelay, systemClock, type Clock, type RandomSource } from '@sluice/core';
import { RESOURCE_NAME_PATTERN, type BreakerState, type RetryDecision, type RetryRequest } from '@sluice/protocol';
import { hostname } from 'node:os';
import { Dependency } from './dependency';
import type { Event } from './events';
import { fetchThrough, type SluiceFetchInit } from './fetch';
import { BreakerFeed } from './fleet/breaker-feed';
import {
  CoordinatorLink,
  FAILURES_BEFORE_FALLBACK,
  consoleLogger,
  silentLogger,
  type FallbackChange,
  type SluiceLogger,
} from './fleet/coordinator-link';
import { FleetDependency, type BreakerChange } from './fleet/fleet-dependency';
import { LeaseKeeper } from './fleet/leases';
import type { RetryVerdict } from './fleet/local-guard';
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
import type { AdmitVerdict, SluiceRuntime } from './runtime';
import { CoordinatorTransport, type AskTimeouts } from './transport/coordinator-transport';
import { TimeoutWatch } from './timeout-watch';
import { Agents } from './transport/http';

/** Reported counts older than this are dropped instead of sent late. */
const MAX_REPORT_AGE_MS = 10_000;

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
  private readonly logger: SluiceLogger;
  /** Limited dependencies already said to go unchecked during this outage (`fail-open`). */
  private readonly unchecked = new Set<string>();
  private readonly defaults: ResolvedDependencyOptions;
  private readonly fallbackMode: FallbackMode;
  private readonly fallbackShare: number | undefined;
  private readonly decisionTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private closed = false;

  /**
   * When the SDK switches to its local fallback (`active: true`) and back (`active: false`).
   * @example
   * sluice.onFallback(({ active, during }) => metrics.fallback.set(active ? 1 : 0));
   */
  readonly onFallback: Event<FallbackChange>;

  /**
   * @example
   * const sluice = new Sluice({ baseUrls: 'http://127.0.0.1:8080', namespace: 'shop', fallback: 'local' });
   */
  constructor(options: SluiceOptions) {
    super();
    if (!RESOURCE_NAME_PATTERN.test(options.namespace)) {
      throw new TypeError(`namespace must match ${RESOURCE_NAME_PATTERN.source}, got "${options.namespace}"`);
    }
    const baseUrls = Array.isArray(options.baseUrls) ? options.baseUrls : [options.baseUrls];
    if (baseUrls.length === 0) throw new TypeError('baseUrls needs at least one coordinator URL');
    const clock: Clock = options.clock ?? systemClock;
    const random: RandomSource = options.random ?? Math.random;
    const logger: SluiceLogger = options.logger === false ? silentLogger : (options.logger ?? consoleLogger);
    this.logger = logger;
    this.defaults = resolveDependencyOptions(DEPENDENCY_DEFAULTS, options.defaults);
    this.fallbackMode = options.fallback ?? 'local';
    this.fallbackShare = options.fallbackShare;
    if (this.fallbackShare !== undefined && !(this.fallbackShare > 0 && this.fallbackShare <= 1)) {
      throw new TypeError('fallbackShare must be in (0, 1]');
    }
    this.decisionTimeoutMs = options.decisionTimeoutMs ?? 50;
    const requestTimeoutMs = options.requestTimeoutMs ?? 1000;
    this.requestTimeoutMs = requestTimeoutMs;
    const reportIntervalMs = options.reportIntervalMs ?? 200;
    positiveInteger('decisionTimeoutMs', this.decisionTimeoutMs, 1, 60_000);
    positiveInteger('requestTimeoutMs', requestTimeoutMs, 1, 60_000);
    positiveInteger('reportIntervalMs', reportIntervalMs, 1, 60_000);

    const agents = new Agents();
    const failuresBeforeFallback = options.failuresBeforeFallback ?? FAILURES_BEFORE_FALLBACK;
    positiveInteger('failuresBeforeFallback', failuresBeforeFallback, 1, 100);
    this.link = new CoordinatorLink(logger, this.fallbackMode, failuresBeforeFallback, () => clock.now());
    this.onFallback = this.link.changes.event;
    this.link.changes.event(({ active }) => {
      if (!active) this.unchecked.clear();
      else for (const dependency of this.fleet.values()) dependency.fallbackStarts(clock.now());
    });
    this.transport = new CoordinatorTransport({
      baseUrls,
      token: options.token,
      namespace: options.namespace,
      agents,
      connectTimeoutMs: options.coordinatorConnectTimeoutMs ?? 100,
    });
    this.reporter = new Reporter(() => this.fleet.values(), this.transport, this.link, clock, {
      reporter: options.reporter ?? defaultReporter(),
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
    this.runtime = {
      clock,
      random,
      link: this.link,
      agents,
      timeouts,
      leases: this.leases,
      fallbackMode: this.fallbackMode,
      decideRetry: (dependency, request) => this.decideRetry(dependency, request),
      admit: (dependency, cost) => this.admit(dependency, cost),
      firstView: (dependency, maxWaitMs) => this.firstView(dependency, maxWaitMs),
      limitsUnchecked: (dependency) => this.limitsUnchecked(dependency),
      reportProbe: (dependency, token, success) => {
        if (dependency.pendingSince === 0) dependency.pendingSince = clock.now();
        dependency.probes.push({ token, success });
        void this.reporter.flush();
      },
      breakerState: (dependency, now) => this.breakerState(dependency, now),
      // While the fleet governs, a probe needs the fleet's token: an admit that did not answer lets none out.
      tryLocalProbe: (dependency, now) => this.runtime.governedLocally() && dependency.local.tryProbe(now),
      governedLocally: () => this.link.fallback && this.fallbackMode === 'local',
    };
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
    if ((change.source === 'local') === this.runtime.governedLocally()) this.breakerChanged(change);
  }

  private breakerState(dependency: FleetDependency, now: number): BreakerState {
    if (!this.link.fallback) return dependency.fleetState(now);
    if (this.fallbackMode === 'local') return dependency.local.state(now);
    if (this.fallbackMode === 'fail-open') return 'closed';
    return dependency.fleetState(now);
  }

  private async decideRetry(dependency: FleetDependency, request: RetryRequest): Promise<RetryVerdict> {
    if (!this.link.fallback && !this.closed) {
      const askedAt = this.runtime.clock.now();
      const answer = this.transport.retry(dependency.name, request, this.decisionTimeouts());
      const answered = (decision: RetryDecision) => {
        this.link.succeeded('retry');
        dependency.applyState(decision.breaker.state);
      };
      try {
        const decision = await this.withinDecisionTimeout(answer);
        if (decision === undefined) {
          // Slow is not down: the late answer, or its failure, tells the link. No retry without a grant.
          void answer.then(answered, (error: unknown) => this.link.failed('retry', error, askedAt));
          return { allow: false, reason: 'coordinator_unavailable', delayMs: 0 };
        }
        answered(decision);
        if (decision.allow) dependency.local.countFleetRetry(this.runtime.clock.now());
        return {
          allow: decision.allow,
          reason: decision.reason,
          delayMs: decision.delayMs,
          breakerState: decision.breaker.state,
        };
      } catch (error) {
        // A hiccup, not yet an outage: no retry without the fleet's grant.
        if (!this.link.failed('retry', error, askedAt)) {
          return { allow: false, reason: 'coordinator_unavailable', delayMs: 0 };
        }
      }
    }
    const now = this.runtime.clock.now();
    switch (this.fallbackMode) {
      case 'local': {
        const verdict = dependency.local.decideRetry(request, now, this.runtime.random);
        if (verdict.allow) dependency.recordOwnRetry(now);
        return verdict;
      }
      case 'fail-open': {
        const { backoff } = dependency.fallbackPolicy;
        const delayMs = backoffDelay(
          backoff,
          { attempt: request.attempt, retryAfterMs: request.retryAfterMs },
          this.runtime.random,
        );
        dependency.recordOwnRetry(now);
        return { allow: true, reason: 'granted', delayMs };
      }
      case 'fail-closed':
        return { allow: false, reason: 'coordinator_unavailable', delayMs: 0 };
    }
  }

  /**
   * Asks admit, waiting the decision timeout for the answer. The request itself may take the longer
   * request timeout: an answer that comes after the caller stopped waiting may grant a lease nobody
   * holds, and it is released then rather than left to expire.
   */
  private async admit(dependency: FleetDependency, cost: number): Promise<AdmitVerdict | undefined> {
    const askedAt = Date.now();
    const startedAt = this.runtime.clock.now();
    const answer = this.transport.admit(dependency.name, this.decisionTimeouts(), cost);
    try {
      const decision = await this.withinDecisionTimeout(answer);
      if (decision === undefined) {
        // Slow is not down: the late answer, or its failure, tells the link; the local limits decide this call.
        void answer.then(
          (lateDecision) => {
            this.link.succeeded('admit');
            if (lateDecision.lease) this.leases.releaseUnheld(dependency.name, lateDecision.lease.id);
          },
          (error: unknown) => this.link.failed('admit', error, startedAt),
        );
        return undefined;
      }
      this.link.succeeded('admit');
      dependency.applyState(decision.breaker.state);
      return {
        allow: decision.allow,
        reason: decision.reason,
        state: decision.breaker.state,
        retryAfterMs: decision.retryAfterMs,
        probeToken: decision.probe?.token,
        lease: decision.lease,
        askedAt,
      };
    } catch (error) {
      this.link.failed('admit', error, startedAt);
      return undefined;
    }
  }

  /**
   * A decision's request may take the longer of the two timeouts (a late answer still tells the
   * link, and an admit's late lease is released); it is asked again, with the same `requestId`,
   * only while the caller still waits for it, within the decision timeout.
   */
  private decisionTimeouts(): AskTimeouts {
    return {
      timeoutMs: Math.max(this.decisionTimeoutMs, this.requestTimeoutMs),
      reAskWithinMs: this.decisionTimeoutMs,
    };
  }

  /** The answer, if it comes within the decision timeout; undefined if it is later (it may still come). */
  private async withinDecisionTimeout<T>(answer: Promise<T>): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), this.decisionTimeoutMs)),
    );
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(timer);
    }
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

  private limitsUnchecked(dependency: FleetDependency): void {
    if (this.unchecked.has(dependency.name)) return;
    this.unchecked.add(dependency.name);
    this.logger.warn(
      `${dependency.name}: rate and concurrency limits go unchecked while the coordinator is away (fail-open fallback)`,
    );
  }
}

/** `host-pid`, in the characters a reporter name may use. */
function defaultReporter(): string {
  return `${hostname()}-${process.pid}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128);
}
