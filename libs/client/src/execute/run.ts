import type { BreakerState } from '@sluice/protocol';
import { currentContext } from '../context/request-context';
import { NO_ADMISSION } from '../decide/decider';
import { DeadlineExceededError } from '../errors';
import type { AttemptContext, ExecuteOptions } from '../execute-options';
import { positiveInteger } from '../options';
import { admit, goesStraightOut } from './admission';
import { sendAttempt, type Attempt } from './attempt';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';
import { hedgedRound } from './hedging';
import { abandonAdmission, failed, launch, succeeded } from './outcomes';
import { retryStep } from './retry-step';

type Work<T> = (context: AttemptContext) => PromiseLike<T> | T;

/**
 * One `execute` call, from its first attempt to its value or its give-up: each round is admitted
 * when it must be (a breaker that is not closed, a limited dependency), sends its attempt (and a
 * hedge, when hedging applies), and a failure takes the retry step, which waits the granted
 * backoff or gives up. A client made with `verify: true` first waits for the token's verification;
 * a dependency met for the first time, for its first view. Through a closed breaker the first
 * attempt goes out before anything is awaited.
 */
export function run<T>(policy: CallPolicy, fn: Work<T>, options: ExecuteOptions): Promise<T> {
  const { fleet, runtime } = policy;
  const start = runtime.clock.now();
  let call: Call;
  try {
    call = newCall(policy, options, start);
  } catch (error) {
    return Promise.reject(error);
  }
  if (runtime.beforeCall !== undefined || (fleet.policy === undefined && fleet.firstView)) {
    return afterWaits(policy, fn, call);
  }
  return round(policy, fn, call, start);
}

/** Waits for the verification and the first view, then runs the first round. */
async function afterWaits<T>(policy: CallPolicy, fn: Work<T>, call: Call): Promise<T> {
  const { fleet, runtime } = policy;
  if (runtime.beforeCall !== undefined) await runtime.beforeCall();
  // A dependency met for the first time: its limits come with its first view, so wait for it (within
  // half of what is left of the deadline).
  if (fleet.policy === undefined && fleet.firstView) {
    await runtime.firstView(fleet, Math.floor((call.deadlineAt - runtime.clock.now()) / 2));
  }
  return round(policy, fn, call, runtime.clock.now());
}

/** One round at `start`: within the deadline, admitted when it must be, its attempt (or a hedged pair). */
function round<T>(policy: CallPolicy, fn: Work<T>, call: Call, start: number): Promise<T> {
  const { fleet, runtime } = policy;
  if (call.deadlineAt <= start) {
    return Promise.reject(policy.givingUp(call, new DeadlineExceededError(policy.name, call.lastError, call.launched)));
  }
  const state = runtime.decider.breakerState(fleet, start);
  if (!goesStraightOut(policy, state) || (call.idempotent && policy.options.hedge)) {
    return admittedRound(policy, fn, call, state);
  }
  return sent(launch(policy, call, fn, NO_ADMISSION, start, false));
}

/** A round that is admitted first, or hedged. */
async function admittedRound<T>(policy: CallPolicy, fn: Work<T>, call: Call, state: BreakerState): Promise<T> {
  const { runtime } = policy;
  let admission = NO_ADMISSION;
  if (!goesStraightOut(policy, state)) {
    admission = await admit(policy, call, state);
    if (call.signal?.aborted) {
      abandonAdmission(policy, admission);
      throw call.signal.reason;
    }
  }
  const start = runtime.clock.now();
  if (call.deadlineAt <= start) {
    // Admitted in time for the decision, not for the call: nothing goes out past its deadline.
    abandonAdmission(policy, admission);
    throw policy.givingUp(call, new DeadlineExceededError(policy.name, call.lastError, call.launched));
  }
  const hedgeDelayMs = call.idempotent && admission.probe === undefined ? policy.hedgeDelayMs : undefined;
  if (hedgeDelayMs === undefined) return sent(launch(policy, call, fn, admission, start, false));
  let value: T;
  try {
    value = await hedgedRound(policy, fn, call, admission, start, hedgeDelayMs);
  } catch (error) {
    return retried(policy, fn, call, error);
  }
  return value;
}

/** Sends the round's attempt: the call's value; or, when the attempt fails, the rest of the call. */
function sent<T>(attempt: Attempt): Promise<T> {
  return sendAttempt<T>(attempt, attempt.policy.runtime.timeouts, answered, failedRound);
}

/** The attempt answered: its value is the call's. */
function answered<T>(attempt: Attempt, value: unknown): T {
  succeeded(attempt.policy, attempt.call, attempt);
  return value as T;
}

/** The attempt failed: the rest of the call. */
function failedRound<T>(attempt: Attempt, error: unknown): Promise<T> {
  const { policy, call } = attempt;
  failed(policy, call, attempt, error);
  return retried(policy, attempt.work as Work<T>, call, error);
}

/** After a failed round: the caller's abort ends the call; else the retry step (which may give up), then the next round. */
async function retried<T>(policy: CallPolicy, fn: Work<T>, call: Call, error: unknown): Promise<T> {
  if (call.signal?.aborted) throw call.signal.reason;
  call.lastError = error;
  await retryStep(policy, call, error);
  return round(policy, fn, call, policy.runtime.clock.now());
}

/** The call's state: its deadline (never past the request's own), idempotency and cost. */
function newCall(policy: CallPolicy, options: ExecuteOptions, now: number): Call {
  const signal = options.signal;
  if (signal?.aborted) throw signal.reason;
  const cost = options.cost ?? 1;
  if (cost !== 1) positiveInteger('cost', cost, 1, 1_000_000);
  const request = currentContext();
  let deadlineAt = now + (options.deadlineMs ?? policy.options.deadlineMs);
  if (request?.deadlineAt !== undefined && request.deadlineAt < deadlineAt) deadlineAt = request.deadlineAt;
  return {
    deadlineAt,
    idempotent: options.idempotent ?? policy.options.idempotent,
    key: options.idempotencyKey,
    signal,
    request,
    launched: 0,
    retryGranted: false,
    cost,
    lastError: undefined,
  };
}
