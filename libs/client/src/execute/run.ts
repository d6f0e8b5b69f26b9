import { currentContext } from '../context/request-context';
import { NO_ADMISSION } from '../decide/decider';
import { DeadlineExceededError } from '../errors';
import type { AttemptContext, ExecuteOptions } from '../execute-options';
import { positiveInteger } from '../options';
import { admit, goesStraightOut } from './admission';
import type { Attempt } from './attempt';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';
import { hedgedRound } from './hedging';
import { abandonAdmission, failed, launch, succeeded } from './outcomes';
import { retryStep } from './retry-step';

/**
 * One `execute` call, from its first attempt to its value or its give-up: each round is admitted
 * when it must be (a breaker that is not closed, a limited dependency), sends its attempt (and a
 * hedge, when hedging applies), and a failure takes the retry step, which waits the granted
 * backoff or gives up. A client made with `verify: true` first waits for the token's verification.
 */
export async function run<T>(
  policy: CallPolicy,
  fn: (context: AttemptContext) => PromiseLike<T> | T,
  options: ExecuteOptions,
): Promise<T> {
  const { fleet, runtime } = policy;
  const { clock, decider } = runtime;
  const call = newCall(policy, options);
  if (runtime.beforeCall !== undefined) await runtime.beforeCall();
  // A dependency met for the first time: its limits come with its first view, so wait for it (within
  // half of what is left of the deadline).
  if (fleet.policy === undefined && fleet.firstView) {
    await runtime.firstView(fleet, Math.floor((call.deadlineAt - clock.now()) / 2));
  }
  for (;;) {
    let start = clock.now();
    if (call.deadlineAt <= start) {
      throw policy.givingUp(call, new DeadlineExceededError(policy.name, call.lastError, call.launched));
    }
    const state = decider.breakerState(fleet, start);
    let admission = NO_ADMISSION;
    if (!goesStraightOut(policy, state)) {
      admission = await admit(policy, call, state);
      if (call.signal?.aborted) {
        abandonAdmission(policy, admission);
        throw call.signal.reason;
      }
      start = clock.now();
    }
    const hedgeDelayMs = call.idempotent && admission.probe === undefined ? policy.hedgeDelayMs : undefined;
    let attempt: Attempt | undefined;
    try {
      if (hedgeDelayMs !== undefined) return await hedgedRound(policy, fn, call, admission, start, hedgeDelayMs);
      attempt = launch(policy, call, admission, start, false);
      const value = await attempt.send(fn, runtime.timeouts);
      succeeded(policy, call, attempt);
      return value;
    } catch (error) {
      if (attempt) failed(policy, call, attempt, error);
      if (call.signal?.aborted) throw call.signal.reason;
      call.lastError = error;
      await retryStep(policy, call, error);
    }
  }
}

/** The call's state: its deadline (never past the request's own), idempotency and cost. */
function newCall(policy: CallPolicy, options: ExecuteOptions): Call {
  const signal = options.signal;
  if (signal?.aborted) throw signal.reason;
  const cost = options.cost ?? 1;
  if (cost !== 1) positiveInteger('cost', cost, 1, 1_000_000);
  const request = currentContext();
  let deadlineAt = policy.runtime.clock.now() + (options.deadlineMs ?? policy.options.deadlineMs);
  if (request?.deadlineAt !== undefined && request.deadlineAt < deadlineAt) deadlineAt = request.deadlineAt;
  return {
    deadlineAt,
    idempotent: options.idempotent ?? policy.options.idempotent,
    key: options.idempotencyKey,
    signal,
    request,
    launched: 0,
    cost,
    lastError: undefined,
  };
}
