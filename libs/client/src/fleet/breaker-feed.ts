import { backoffDelay, type Clock, type RandomSource } from '@sluice/core';
import type { BreakerEvent, PolicyEvent } from '@sluice/protocol';
import { isConfigError } from '../errors';
import { readEventStream, type EventFrame } from '../transport/event-stream';
import type { CoordinatorTransport } from '../transport/coordinator-transport';
import type { CoordinatorLink } from './coordinator-link';
import type { FleetDependency } from './fleet-dependency';

export interface BreakerFeedOptions {
  /** Use the event stream (true) or only poll GET /deps/{dep} with ETags (false). */
  sse: boolean;
  /** How often dependencies are polled while the event stream is down. */
  pollIntervalMs: number;
  /** How often a dependency's view (policy, latency) is re-read while the stream is up. */
  viewRefreshMs: number;
  /** A stream silent for this long (the coordinator sends a comment every 15 s) is reopened. */
  idleTimeoutMs: number;
  timeoutMs: number;
}

/** Reconnection backoff of the event stream. */
const RECONNECT = { baseMs: 100, capMs: 5000, jitter: 'full' as const };

/**
 * Keeps every dependency's fleet view current with no per-call request: breaker transitions pushed
 * over GET /events (Server-Sent Events), reopened with backoff when it drops; while it is down,
 * GET /deps/{dep} polled with If-None-Match. Views (policy, latency) are re-read now and then.
 */
export class BreakerFeed {
  /** True while the event stream is open. */
  connected = false;
  private closed = false;
  private controller: AbortController | undefined;
  private reconnects = 0;
  /** The set of dependencies changed since the stream was opened. */
  private reopen = false;
  private reopenScheduled = false;
  private wake: (() => void) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly reading = new Set<string>();

  constructor(
    private readonly dependencies: Map<string, FleetDependency>,
    private readonly transport: CoordinatorTransport,
    private readonly link: CoordinatorLink,
    private readonly clock: Clock,
    private readonly random: RandomSource,
    private readonly options: BreakerFeedOptions,
  ) {}

  start(): void {
    this.pollTimer = setInterval(() => this.poll(), this.options.pollIntervalMs);
    this.pollTimer.unref();
    if (this.options.sse) void this.streamLoop();
  }

  /** A dependency was added: read its view now, and follow it on the stream. */
  follow(dependency: FleetDependency): void {
    const first = this.read(dependency).finally(() => {
      if (dependency.firstView === first) dependency.firstView = undefined;
    });
    dependency.firstView = first;
    if (!this.options.sse) return;
    this.reopen = true;
    if (this.reopenScheduled) return;
    this.reopenScheduled = true;
    setImmediate(() => {
      this.reopenScheduled = false;
      if (this.wake) this.wake();
      else this.controller?.abort(); // reopen with the longer list
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.pollTimer);
    this.controller?.abort();
    this.wake?.();
  }

  /** Polls every dependency while the stream is down; re-reads stale views while it is up. */
  private poll(): void {
    const now = this.clock.now();
    for (const dependency of this.dependencies.values()) {
      const age = now - dependency.lastReadAt;
      if (!this.connected || age >= this.options.viewRefreshMs) void this.read(dependency);
    }
  }

  private async read(dependency: FleetDependency): Promise<void> {
    if (this.reading.has(dependency.name) || this.closed) return;
    this.reading.add(dependency.name);
    try {
      const { view, etag } = await this.transport.readDependency(
        dependency.name,
        dependency.etag,
        this.options.timeoutMs,
      );
      this.link.succeeded('poll');
      if (view) dependency.applyView(view, etag, this.clock.now());
      else dependency.lastReadAt = this.clock.now();
    } catch (error) {
      if (!this.closed) this.link.failed('poll', error);
    } finally {
      this.reading.delete(dependency.name);
    }
  }

  private async streamLoop(): Promise<void> {
    while (!this.closed) {
      this.reopen = false;
      const names = [...this.dependencies.keys()];
      if (names.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const controller = (this.controller = new AbortController());
      try {
        const stream = await this.transport.openEvents(names, controller.signal, this.options.timeoutMs);
        this.connected = true;
        this.reconnects = 0;
        let idle = setTimeout(() => controller.abort(), this.options.idleTimeoutMs);
        try {
          await readEventStream(
            stream,
            (frame) => this.onFrame(frame),
            () => {
              clearTimeout(idle);
              idle = setTimeout(() => controller.abort(), this.options.idleTimeoutMs);
            },
          );
        } finally {
          clearTimeout(idle);
        }
      } catch (error) {
        // Dropped, refused or reopened: polling covers the gap, and the loop reconnects. A refused
        // token is said at once (it is no outage).
        if (isConfigError(error)) this.link.failed('events', error);
      }
      this.connected = false;
      if (this.closed) return;
      if (this.reopen) continue; // reopened for a new dependency: no backoff
      this.reconnects++;
      // A dropped stream may hide a missed transition: read every view now.
      this.poll();
      await this.pause(Math.max(50, backoffDelay(RECONNECT, { attempt: this.reconnects }, this.random)));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private onFrame(frame: EventFrame): void {
    if (!frame.data) return;
    let data: unknown;
    try {
      data = JSON.parse(frame.data);
    } catch {
      return;
    }
    if (frame.event === 'breaker') {
      // Read defensively: a field may be missing from another coordinator's version.
      const event = data as Partial<BreakerEvent>;
      if (event.dep && event.state) {
        this.dependencies.get(event.dep)?.applyState(event.state, event.openUntil ?? null, event.reason ?? null);
      }
    } else if (frame.event === 'policy') {
      const event = data as Partial<PolicyEvent>;
      // A dependency's policy (or the default, dep null) changed: read the views again.
      for (const dependency of this.dependencies.values()) {
        if (!event.dep || event.dep === dependency.name) {
          dependency.etag = undefined;
          void this.read(dependency);
        }
      }
    }
  }
}
