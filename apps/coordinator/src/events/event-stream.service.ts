import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import type { FastifyBaseLogger } from 'fastify';
import type { ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { BreakerEvent, SluiceEvents } from '@sluice/protocol';
import type { DependencyRef, Store, StoreEvent, Unsubscribe } from '@sluice/store';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { readPolicyOf } from '../dependencies/read-policy';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/** One client's stream: which dependencies it follows (all of the namespace when none are listed). */
export interface EventSubscription {
  namespace: string;
  dependencies?: string[];
}

/**
 * Server-Sent Events of breaker transitions and policy changes: on connect, one `breaker` event per
 * dependency; then every transition as the store publishes it; a comment line keeps the stream
 * alive; every stream ends cleanly when the app shuts down.
 */
const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** After a resync, a read is tried this many times, this far apart: the store's connection may be back after the subscriber's. */
const RESYNC_TRIES = 20;
const RESYNC_RETRY_MS = 250;

/** Runs `read` until it succeeds, at most RESYNC_TRIES times, while `open()` says the stream is. */
async function retried(read: () => Promise<unknown>, open: () => boolean): Promise<void> {
  for (let attempt = 1; open(); attempt++) {
    try {
      await read();
      return;
    } catch {
      if (attempt >= RESYNC_TRIES) return;
      await delay(RESYNC_RETRY_MS);
    }
  }
}

/** Writes one event: its name and its data, as libs/protocol types them. */
type Send = <E extends keyof SluiceEvents>(event: E, data: SluiceEvents[E]) => void;

@Injectable()
export class EventStreamService implements BeforeApplicationShutdown {
  private readonly open = new Set<() => Promise<void>>();

  constructor(
    @Inject(STORE) private readonly store: Store,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly registry: DependencyRegistry,
    private readonly policies: PolicyService,
    private readonly metrics: MetricsService,
  ) {}

  /** Answers a HEAD: the stream's headers, no stream, no client counted. */
  head(response: ServerResponse): void {
    response.writeHead(200, STREAM_HEADERS);
    response.end();
  }

  /**
   * Streams to `response` (already hijacked from the framework) until the client goes away; a
   * failure is logged to `log`, the request's own logger.
   */
  async stream(request: EventSubscription, response: ServerResponse, log: FastifyBaseLogger): Promise<void> {
    response.writeHead(200, STREAM_HEADERS);
    const send: Send = (event, data) => {
      if (!response.writableEnded) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const unsubscribes: Unsubscribe[] = [];
    const followed = new Set<string>();
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), this.config.sseHeartbeatMs);
    const close = async () => {
      if (!this.open.delete(close)) return;
      clearInterval(heartbeat);
      this.metrics.sseClients.dec();
      if (!response.writableEnded) response.end();
      await Promise.all(unsubscribes.map((unsubscribe) => unsubscribe().catch(() => undefined)));
    };
    this.open.add(close);
    const isOpen = () => this.open.has(close);
    this.metrics.sseClients.inc();
    response.on('close', () => void close());

    const follow = async (dependency: string) => {
      if (followed.has(dependency)) return;
      followed.add(dependency);
      const ref = { namespace: request.namespace, dependency };
      const snapshot = async () => send('breaker', await this.breakerNow(ref));
      // Subscribe before the snapshot, so no transition falls between the two; after a lost
      // subscription (resync) the snapshot is sent again, for what it missed.
      unsubscribes.push(
        await this.store.subscribeDependency(ref, (event) => {
          if (event.type === 'resync') void retried(snapshot, isOpen);
          else this.forward(event, send);
        }),
      );
      await snapshot();
    };
    /** The listed dependencies, or every one of the namespace (again after a resync: new ones it missed). */
    const followAll = async () => {
      const dependencies = request.dependencies ?? (await this.registry.list(request.namespace));
      await Promise.all(dependencies.map(follow));
    };
    try {
      unsubscribes.push(
        await this.store.subscribeNamespace(request.namespace, (event) => {
          if (event.type === 'dependency' && !request.dependencies) void follow(event.dep).catch(() => undefined);
          else if (event.type === 'resync' && !request.dependencies) void retried(followAll, isOpen);
          else this.forward(event, send, request.dependencies);
        }),
      );
      await followAll();
    } catch (error) {
      log.warn({ context: 'Events' }, `event stream for ${request.namespace} failed: ${(error as Error).message}`);
      await close();
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.open].map((close) => close()));
  }

  private forward(event: StoreEvent, send: Send, only?: string[]): void {
    if (event.type === 'breaker') {
      const { dep, state, since, openUntil, reason } = event;
      send('breaker', { dep, state, since, openUntil, reason });
    } else if (event.type === 'policy' && (event.kind === 'dep' || event.kind === 'default')) {
      const dep = event.kind === 'dep' ? event.name : null;
      if (!only || dep === null || only.includes(dep)) send('policy', { dep });
    }
  }

  private async breakerNow(ref: DependencyRef): Promise<BreakerEvent> {
    const policy = await this.policies.forDependency(ref.namespace, ref.dependency);
    const { breaker } = await this.store.readDependency(ref, readPolicyOf(policy));
    const { state, since, openUntil, reason } = breaker.record;
    return { dep: ref.dependency, state, since, openUntil, reason };
  }
}
