/** GET /v1/{ns}/events: the `data` of each Server-Sent Event, by event name. */
import type { BreakerState } from './retry';

/** `event: breaker`: a dependency's breaker state, on connect and on every transition. */
export interface BreakerEvent {
  dep: string;
  state: BreakerState;
  since: number | null;
  openUntil: number | null;
  /** The operator's reason, for forced_open and forced_closed; null otherwise. */
  reason: string | null;
}

/** `event: policy`: a policy document changed; `dep` null when it is the namespace default. */
export interface PolicyEvent {
  dep: string | null;
}

/** Every event of the stream: its name and its data. */
export interface SluiceEvents {
  breaker: BreakerEvent;
  policy: PolicyEvent;
}

export const EVENT_NAMES = ['breaker', 'policy'] as const satisfies readonly (keyof SluiceEvents)[];
export type EventName = (typeof EVENT_NAMES)[number];
