import {
  createDependencyState,
  recordEntered,
  type BreakerRecord,
  type BreakerSnapshot,
  type Clock,
  type DependencyState,
  type KeptAdmission,
  type KeptRetry,
} from '@sluice/core';
import type { SluiceKeys } from '../keys';
import type { DependencyRef } from '../roles/common';
import type { EventHandler, StoreEvent, Unsubscribe } from '../roles/events';
import { ExpiringMap } from './expiring-map';

/** What a granted call with a caller-chosen id keeps for its repeats (the request keys' hashes in Redis). */
export type KeptOutcome =
  | ({ kind: 'retry' } & KeptRetry)
  | ({ kind: 'admit' } & KeptAdmission)
  | { kind: 'take'; remaining: number; resetMs: number };

/** Local pub/sub over the same channel names as Redis (SluiceKeys `events`). */
export class MemoryChannels {
  private readonly handlers = new Map<string, Set<EventHandler>>();

  subscribe(channel: string, handler: EventHandler): Unsubscribe {
    let handlers = this.handlers.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.handlers.set(channel, handlers);
    }
    handlers.add(handler);
    return async () => {
      handlers.delete(handler);
      if (handlers.size === 0) this.handlers.delete(channel);
    };
  }

  publish(channel: string, event: StoreEvent): void {
    const handlers = this.handlers.get(channel);
    if (!handlers) return;
    // Delivered asynchronously, as pub/sub is.
    queueMicrotask(() => handlers.forEach((handler) => handler(event)));
  }

  clear(): void {
    this.handlers.clear();
  }
}

/**
 * The state the per-domain parts of MemoryStore share: the clock, the keys (the same SluiceKeys as
 * Redis, so maps are keyed as Redis keys are), the dependencies, the kept outcomes and the channels.
 */
export class MemoryContext {
  /** Dependency (its breaker key) → its state. */
  readonly dependencies = new Map<string, DependencyState>();
  /** Request key (SluiceKeys.dependencyRequests, rateLimitRequest) → the first granted outcome. */
  readonly kept = new ExpiringMap<KeptOutcome>();
  readonly channels = new MemoryChannels();
  /** Namespace → dependency → when its forced state lapses (Infinity: until reset); SluiceKeys `forced`. */
  readonly forced = new Map<string, Map<string, number>>();

  constructor(
    readonly clock: Clock,
    readonly keys: SluiceKeys,
  ) {}

  now(): number {
    return this.clock.now();
  }

  /** The dependency's state, created on first use. */
  state(ref: DependencyRef): DependencyState {
    const key = this.keys.dependency(ref.namespace, ref.dependency).breaker;
    let state = this.dependencies.get(key);
    if (!state) {
      state = createDependencyState();
      this.dependencies.set(key, state);
    }
    return state;
  }

  /** The dependency's state, or undefined when it holds none. */
  existing(ref: DependencyRef): DependencyState | undefined {
    return this.dependencies.get(this.keys.dependency(ref.namespace, ref.dependency).breaker);
  }

  /** Publishes the breaker's transitions on the dependency's channel; returns the snapshot. */
  publishTransitions(ref: DependencyRef, snapshot: BreakerSnapshot): BreakerSnapshot {
    for (const transition of snapshot.transitions) {
      this.publishBreaker(ref, recordEntered(transition) ?? snapshot.record, transition.from, transition.to);
    }
    return snapshot;
  }

  publishBreaker(ref: DependencyRef, record: BreakerRecord, from: BreakerRecord['state'], to = record.state): void {
    this.channels.publish(this.keys.dependency(ref.namespace, ref.dependency).events, {
      type: 'breaker',
      dep: ref.dependency,
      from,
      state: to,
      since: record.since ?? 0,
      openUntil: record.openUntil,
      // An earlier transition of the same change (a lapse before a trip) was not the operator's.
      reason: to === record.state ? record.reason : null,
    });
  }
}
