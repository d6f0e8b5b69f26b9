import type { BreakerState } from '@sluice/protocol';
import { marker } from './sluice-error';
import { GiveUpError } from './give-up-error';

// A call or retry refused by an open breaker, with what the fleet knows of it.

/**
 * What the SDK knows of a breaker that refused a call: its state, the operator's reason for a
 * forced state, and when it may let calls through again.
 * @example
 * const facts: BreakerFacts = { state: 'forced_open', operatorReason: 'bad deploy', openUntil: null, retryAfterMs: null };
 */
export interface BreakerFacts {
  /** The breaker state that refused the call. */
  state: BreakerState;
  /** The operator's reason, when an operator forced the state; null otherwise or when unknown. */
  operatorReason: string | null;
  /**
   * When the breaker may let calls through (epoch ms): `open` half-opens then, a forced state
   * lapses then. Null when unknown, or for a forced state held until an operator resets it.
   */
  openUntil: number | null;
  /** In how many ms from the refusal the same call could go through; null when unknown or held until reset. */
  retryAfterMs: number | null;
}

/**
 * The dependency's breaker is open (fleet-wide, or locally in fallback): the call was refused
 * without being sent, or a retry was refused. It carries what the fleet knows of the breaker:
 * `state`, the operator's reason when one forced it open (`operatorReason`; `reason` stays the
 * give-up reason, `breaker_open`, like every {@link GiveUpError}'s), `openUntil` and `retryAfterMs`.
 * @example
 * try {
 *   await payments.execute(call);
 * } catch (error) {
 *   if (!isBreakerOpenError(error)) throw error;
 *   if (error.state === 'forced_open') log.warn(`payments held open by an operator: ${error.operatorReason}`);
 *   if (error.retryAfterMs !== null) reply.header('retry-after', Math.ceil(error.retryAfterMs / 1000));
 *   return cachedAnswer();
 * }
 */
export class BreakerOpenError extends GiveUpError implements BreakerFacts {
  /** Marker for {@link isBreakerOpenError}. */
  readonly isBreakerOpenError = true;
  /** The breaker state that refused the call. */
  readonly state: BreakerState;
  /** The operator's reason for a forced state (e.g. "bad deploy"); null for an automatic open, or when unknown. */
  readonly operatorReason: string | null;
  /** When the breaker may let calls through again (epoch ms); null when unknown or held until reset. */
  readonly openUntil: number | null;
  /** Ms from the refusal until the breaker may let the call through; null when unknown or held until reset. */
  readonly retryAfterMs: number | null;

  constructor(dependency: string, breaker: BreakerState | BreakerFacts, lastError: unknown = undefined, attempts = 0) {
    const facts = typeof breaker === 'string' ? unknownFacts(breaker) : breaker;
    super(dependency, 'breaker_open', lastError, attempts, breakerMessage(dependency, facts));
    this.state = facts.state;
    this.operatorReason = facts.operatorReason;
    this.openUntil = facts.openUntil;
    this.retryAfterMs = facts.retryAfterMs;
  }
}

function unknownFacts(state: BreakerState): BreakerFacts {
  return { state, operatorReason: null, openUntil: null, retryAfterMs: null };
}

/** "payments-api: the circuit breaker is forced_open (bad deploy), for 9 m 58 s more" */
function breakerMessage(dependency: string, facts: BreakerFacts): string {
  const why = facts.operatorReason ? ` (${facts.operatorReason})` : '';
  const until = facts.retryAfterMs === null ? '' : `, for ${duration(facts.retryAfterMs)} more`;
  return `${dependency}: the circuit breaker is ${facts.state}${why}${until}`;
}

/** A wait as a person reads it: "850 ms", "12 s", "9 m 58 s", "2 h 5 m". */
function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} m ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} m`;
}

/**
 * True for a {@link BreakerOpenError}.
 * @example
 * if (isBreakerOpenError(error)) return fallbackAnswer();
 */
export const isBreakerOpenError = marker<BreakerOpenError>('isBreakerOpenError');
