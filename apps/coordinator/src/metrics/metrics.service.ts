import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BREAKER_STATES, RETRY_REASONS, type BreakerState } from '@sluice/protocol';
import { CounterChildren } from './counter-children';
import { HistogramChildren } from './histogram-children';

/**
 * The labels a decision about a dependency that is not registered (a read, a call not worth
 * retrying) is counted under: names nobody registered never become series of their own.
 */
export const UNREGISTERED = { namespace: '_unregistered', dependency: '_unregistered' } as const;
const SHADOW_KINDS = ['retry', 'admit', 'take'] as const;
const RETRY_DECISION_LABELS = ['namespace', 'dependency', 'result'] as const;
type RetryDecisionLabel = (typeof RETRY_DECISION_LABELS)[number];
const QUANTILES = ['0.5', '0.95', '0.99'] as const;

/**
 * Every Prometheus metric the service exposes, on one registry per app instance (so two
 * instances in one process, as in tests, never share counters).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly retryDecisions: Counter<RetryDecisionLabel> = new Counter({
    name: 'sluice_retry_decisions_total',
    help: 'Retry decisions by namespace, dependency and result (the decision reason).',
    labelNames: RETRY_DECISION_LABELS,
    registers: [this.registry],
    collect: (): void => this.retryDecisionCounts.flush(),
  });

  /** sluice_retry_decisions_total by label set, resolved once each: what the decision path counts with. */
  readonly retryDecisionCounts: CounterChildren<RetryDecisionLabel> = new CounterChildren(
    this.retryDecisions,
    RETRY_DECISION_LABELS,
  );

  readonly retriesSucceeded = new Counter({
    name: 'sluice_retries_succeeded_total',
    help:
      'Granted retries that succeeded, as reports said (retriesSucceeded), by namespace and dependency: what an ' +
      'adaptive budget gave back.',
    labelNames: ['namespace', 'dependency'] as const,
    registers: [this.registry],
  });

  readonly retryBudgetCap = new Gauge({
    name: 'sluice_retry_budget_cap',
    help:
      'The most retries a dependency\u2019s budget window holds however many succeed (the limit under a fixed ' +
      'budget), as of the last budget_exhausted denial or budgets listing here.',
    labelNames: ['namespace', 'dependency'] as const,
    registers: [this.registry],
  });

  readonly idempotencyRequests = new Counter({
    name: 'sluice_idempotency_requests_total',
    help: 'Idempotency key claims by namespace and result: claimed, replayed, in_flight, mismatch, recovered.',
    labelNames: ['namespace', 'result'] as const,
    registers: [this.registry],
  });

  /** Called before each scrape of sluice_dead_letters, to read the depths afresh. */
  refreshDeadLetters: () => Promise<void> = async () => {};

  readonly deadLetters = new Gauge({
    name: 'sluice_dead_letters',
    help: 'Dead letters parked per queue (the queues this instance has seen).',
    labelNames: ['namespace', 'queue'] as const,
    registers: [this.registry],
    collect: () => this.refreshDeadLetters(),
  });

  readonly deadLettersDropped = new Counter({
    name: 'sluice_dead_letters_dropped_total',
    help: 'Dead letters dropped, oldest first, to keep a queue within its caps (count and bytes) as a message was parked.',
    labelNames: ['namespace', 'queue'] as const,
    registers: [this.registry],
  });

  /** Observed once per response: children resolved once per label set (`child(method, route, statusCode)`). */
  readonly httpRequestDuration = new HistogramChildren({
    name: 'sluice_http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly storeErrors = new Counter({
    name: 'sluice_store_errors_total',
    help: 'Store operations that failed or timed out, by operation.',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  /** Observed once per store operation: children resolved once per operation (`child(operation)`). */
  readonly storeOperationDuration = new HistogramChildren({
    name: 'sluice_store_operation_duration_seconds',
    help: 'Store operation duration (one Lua script call on Redis), by operation.',
    labelNames: ['operation'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [this.registry],
  });

  readonly breakerState = new Gauge({
    name: 'sluice_breaker_state',
    help: 'Circuit breaker state as this instance last saw it: 1 for the current state, 0 for the others.',
    labelNames: ['namespace', 'dependency', 'state'] as const,
    registers: [this.registry],
  });

  /** The state sluice_breaker_state shows, by `namespace/dependency` (BreakerMetrics writes it on a change). */
  readonly shownBreakerStates = new Map<string, BreakerState>();

  readonly breakerTransitions = new Counter({
    name: 'sluice_breaker_transitions_total',
    help: 'Circuit breaker transitions made through this instance (each is made by exactly one).',
    labelNames: ['namespace', 'dependency', 'from', 'to'] as const,
    registers: [this.registry],
  });

  readonly adminActions = new Counter({
    name: 'sluice_admin_actions_total',
    help: 'Admin actions (trip, force-close, reset, policy changes), by action.',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });

  readonly concurrencyInUse = new Gauge({
    name: 'sluice_concurrency_in_use',
    help: 'Concurrency leases held fleet-wide for a dependency, as of the last admit or release here.',
    labelNames: ['namespace', 'dependency'] as const,
    registers: [this.registry],
  });

  readonly rateLimitDecisions = new Counter({
    name: 'sluice_rate_limit_decisions_total',
    help: 'Named rate limit takes, by namespace, limit and result (granted or rate_limited).',
    labelNames: ['namespace', 'limit', 'result'] as const,
    registers: [this.registry],
  });

  readonly shadowDenials = new Counter({
    name: 'sluice_shadow_denials_total',
    help: 'Decisions a shadow-mode policy allowed that enforcement would have denied, by kind (retry, admit, take).',
    labelNames: ['namespace', 'dependency', 'kind'] as const,
    registers: [this.registry],
  });

  readonly dependencyLatency = new Gauge({
    name: 'sluice_dependency_latency_seconds',
    help: 'Fleet latency percentiles of a dependency as last served here (quantile 0.5, 0.95, 0.99).',
    labelNames: ['namespace', 'dependency', 'quantile'] as const,
    registers: [this.registry],
  });

  readonly storeResets = new Counter({
    name: 'sluice_store_resets_total',
    help: 'Store resets this instance saw: a shard of the store came back without its data (its epoch marker was gone).',
    registers: [this.registry],
  });

  readonly overloadRejections = new Counter({
    name: 'sluice_overload_rejections_total',
    help: 'Client requests shed as overloaded before any work, by reason (event_loop_delay, in_flight).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly requestsInFlight = new Gauge({
    name: 'sluice_http_requests_in_flight',
    help: 'Client API requests in progress on this instance (event streams not counted).',
    registers: [this.registry],
  });

  readonly sseClients = new Gauge({
    name: 'sluice_event_stream_clients',
    help: 'Server-Sent Events streams open on this instance.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'sluice_process_' });
  }

  /** Removes every series labelled with the dependency (it was forgotten: unused for the retention). */
  forgetDependency(namespace: string, dependency: string): void {
    const labels = { namespace, dependency };
    this.retryDecisionCounts.forget((child) => child.namespace === namespace && child.dependency === dependency);
    this.shownBreakerStates.delete(`${namespace}/${dependency}`);
    for (const result of RETRY_REASONS) this.retryDecisions.remove({ ...labels, result });
    for (const state of BREAKER_STATES) {
      this.breakerState.remove({ ...labels, state });
      for (const to of BREAKER_STATES) this.breakerTransitions.remove({ ...labels, from: state, to });
    }
    for (const kind of SHADOW_KINDS) this.shadowDenials.remove({ ...labels, kind });
    for (const quantile of QUANTILES) this.dependencyLatency.remove({ ...labels, quantile });
    this.concurrencyInUse.remove(labels);
    this.retriesSucceeded.remove(labels);
    this.retryBudgetCap.remove(labels);
  }
}
