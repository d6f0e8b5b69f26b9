import type { LatencySummary } from '@sluice/protocol';
import type { GiveUpError } from '../errors';
import type { EventEmitter } from '../events';
import type { FleetDependency } from '../fleet/fleet-dependency';
import type { ResolvedDependencyOptions } from '../options';
import type { GiveUpEvent, RetryEvent } from '../policy-events';
import type { SluiceRuntime } from '../runtime';
import type { Call } from './call';
import { autoTimeoutMs, hedgeDelayMs } from './timing';

/** Where a policy's events go: its own listeners, and the client's. */
export interface PolicyEmitters {
  retry: Array<EventEmitter<RetryEvent>>;
  giveUp: Array<EventEmitter<GiveUpEvent>>;
}

/** What a call's run needs of its dependency's policy: its options, its fleet state, the client, and its events. */
export class CallPolicy {
  private autoTimeoutFor: LatencySummary | undefined | null = null;
  private autoTimeout = 0;

  constructor(
    readonly name: string,
    readonly options: ResolvedDependencyOptions,
    readonly fleet: FleetDependency,
    readonly runtime: SluiceRuntime,
    private readonly emitters: PolicyEmitters,
  ) {}

  /** The per-attempt timeout now, in ms (the fixed one, or the automatic one from the fleet's p99). */
  get attemptTimeoutMs(): number {
    const { timeoutMs } = this.options;
    if (timeoutMs !== 'auto') return timeoutMs;
    // Worked out again only when a new latency summary arrives: it is read per attempt.
    const latency = this.fleet.latency;
    if (latency !== this.autoTimeoutFor) {
      this.autoTimeoutFor = latency;
      this.autoTimeout = autoTimeoutMs(latency?.p99, this.options.autoTimeout);
    }
    return this.autoTimeout;
  }

  /** The hedge delay now, in ms; undefined when hedging is off. */
  get hedgeDelayMs(): number | undefined {
    return this.options.hedge ? hedgeDelayMs(this.fleet.latency?.p95, this.options.hedge) : undefined;
  }

  /** Announces a retry (or a hedge) about to go out. */
  retrying(event: RetryEvent): void {
    for (const emitter of this.emitters.retry) emitter.emit(event);
  }

  /** Announces a give-up and tells the caller of the request being served not to retry it; the error to throw. */
  givingUp(call: Call, error: GiveUpError): GiveUpError {
    const event = { dependency: this.name, reason: error.reason, error };
    for (const emitter of this.emitters.giveUp) emitter.emit(event);
    if (error.reason !== 'not_idempotent') call.request?.pushback?.(error.reason);
    return error;
  }
}
