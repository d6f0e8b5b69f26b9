import { randomUUID } from 'node:crypto';
import { CoordinatorUnavailableError } from '../errors';

/**
 * A fresh caller-chosen id for one state-changing call (`requestId`, `claimId`): a UUID, which
 * matches the API's id pattern (`^[A-Za-z0-9._:-]{1,128}$`).
 */
export function newRequestId(): string {
  return randomUUID();
}

/** After its first exchange, one call is asked again at most this many times. */
export const MAX_REASKS = 2;

/**
 * Whether a call that got no answer from one exchange may be asked again, and where: the rules
 * shared by the SDK's two coordinator clients.
 *
 * - Nothing was done: a 503 `overloaded` (the instance shed the request before any work), or no
 *   connection made at all. Any call may go to another instance, one not yet found so in this
 *   call, never straight back to the one that failed.
 * - Any other non-answer (a 503 `store_unavailable`, a 502 or 504, a connection lost, a timeout)
 *   may hide a change: only a call that carries a caller-chosen id is asked again, with the same
 *   id (the coordinator answers the first outcome), on the next instance, or the same one when
 *   there is only one.
 * - Any other status is the coordinator's answer: never asked again.
 */
export class ReAsks {
  /** Instances found to have done nothing with this call (shed it, or not connected). */
  private readonly untouched = new Set<number>();
  private reAsks = 0;
  /** The last failure that was not an `overloaded` answer: the one that says the coordinator is in trouble. */
  private telling: CoordinatorUnavailableError | undefined;
  private last: CoordinatorUnavailableError | undefined;

  constructor(
    private readonly instances: number,
    /** The call carries a caller-chosen id: a repeat changes nothing. */
    private readonly repeatable: boolean,
  ) {}

  /**
   * Takes the failure of the exchange sent to `index`: the instance to ask next, or undefined when
   * the call ends here (then {@link error} is what it ends with). `timeLeft` says whether the
   * call's time leaves room for another exchange.
   */
  next(index: number, failure: CoordinatorUnavailableError, timeLeft: boolean): number | undefined {
    const nothingDone = failure.overloaded || notConnected(failure);
    if (nothingDone) this.untouched.add(index);
    if (!failure.overloaded) this.telling = failure;
    this.last = failure;
    if (!unanswered(failure) || !timeLeft || this.reAsks >= MAX_REASKS) return undefined;
    const next = (index + 1) % this.instances;
    if (nothingDone ? this.untouched.has(next) : !this.repeatable) return undefined;
    this.reAsks++;
    return next;
  }

  /**
   * What the call ends with: a failure that says the coordinator is in trouble, if any exchange
   * had one, else the last `overloaded` answer (which does not count toward the fallback).
   */
  get error(): CoordinatorUnavailableError | undefined {
    return this.telling ?? this.last;
  }
}

/** No answer at all: no connection, no response in time, or a 502, 503 or 504 (any other status is the coordinator's answer). */
export function unanswered(failure: CoordinatorUnavailableError): boolean {
  return failure.status === undefined || failure.status === 502 || failure.status === 503 || failure.status === 504;
}

/** Error codes of a connection that was never made: the request did not leave. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'SLUICE_CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);

/** True when the request never reached the coordinator (looking through `fetch`'s wrapped causes). */
function notConnected(failure: CoordinatorUnavailableError): boolean {
  let cause: unknown = failure.cause;
  for (let depth = 0; depth < 3 && typeof cause === 'object' && cause !== null; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
