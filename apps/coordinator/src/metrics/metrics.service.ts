import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus metric the service exposes, on one registry per app instance (so two
 * instances in one process, as in tests, never share counters).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly retryDecisions = new Counter({
    name: 'sluice_retry_decisions_total',
    help: 'Retry decisions by namespace, dependency and result (the decision reason).',
    labelNames: ['namespace', 'dependency', 'result'] as const,
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

  readonly httpRequestDuration = new Histogram({
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

  readonly storeOperationDuration = new Histogram({
    name: 'sluice_store_operation_duration_seconds',
    help: 'Store operation duration (one Lua script call on Redis), by operation.',
    labelNames: ['operation'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'sluice_process_' });
  }
}
