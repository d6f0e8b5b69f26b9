import type { BreakerState } from '@sluice/protocol';
import type { DependencyRef } from './common';
import type { PolicyKind } from './policies';

/** What travels on a dependency's or a namespace's event channel. */
export type StoreEvent =
  | {
      type: 'breaker';
      dep: string;
      from: BreakerState;
      state: BreakerState;
      since: number;
      openUntil: number | null;
      /** The operator's reason for a forced state; null otherwise. */
      reason: string | null;
    }
  | { type: 'dependency'; dep: string }
  | { type: 'policy'; kind: PolicyKind; name: string }
  /** The subscription was lost and is back: events published meanwhile were missed, so read the state again. */
  | { type: 'resync' };

export type EventHandler = (event: StoreEvent) => void;
export type Unsubscribe = () => Promise<void>;

/** The events operations publish: breaker transitions, new dependencies, policy changes. */
export interface EventStore {
  /** Calls `handler` for every event of one dependency until unsubscribed. */
  subscribeDependency(ref: DependencyRef, handler: EventHandler): Promise<Unsubscribe>;

  /** Calls `handler` for every event of a namespace (new dependencies, policy changes). */
  subscribeNamespace(namespace: string, handler: EventHandler): Promise<Unsubscribe>;
}
