import { classify, isDependencyFailure } from '../classification';
import type { Admission } from '../decide/decider';
import { releasePermit } from '../decide/permits';
import type { AttemptContext } from '../execute-options';
import { Attempt } from './attempt';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';
import { probeAbandoned, probeSettled, probeUnsent } from './probes';

/**
 * An attempt goes out at `start`: numbered, counted (a first attempt is the budget's deposit),
 * timed out at the smaller of its timeout and the rest of the deadline, and cancelled if the caller
 * aborts.
 */
export function launch(
  policy: CallPolicy,
  call: Call,
  work: (context: AttemptContext) => unknown,
  admission: Admission,
  start: number,
  hedge: boolean,
): Attempt {
  const { runtime, fleet } = policy;
  const number = ++call.launched;
  if (number === 1) fleet.recordRequest(start);
  const retryGranted = call.retryGranted;
  call.retryGranted = false;
  const timeoutMs = Math.max(1, Math.min(policy.attemptTimeoutMs, call.deadlineAt - start));
  const realStart = runtime.realClock ? start : Date.now();
  const attempt = new Attempt(policy, call, work, number, timeoutMs, hedge, start, admission, realStart);
  attempt.retryGranted = retryGranted;
  const signal = call.signal;
  if (signal) {
    attempt.onCallerAbort = () => attempt.cancel(signal.reason);
    signal.addEventListener('abort', attempt.onCallerAbort, { once: true });
  }
  return attempt;
}

/** The attempt answered: its success counted (a granted retry's too), and what it held given back. */
export function succeeded(policy: CallPolicy, call: Call, attempt: Attempt): void {
  settle(policy, call, attempt, false, attempt.retryGranted);
}

/** The attempt failed (or timed out, or was cancelled): counted as the dependency's failure when it is one. */
export function failed(policy: CallPolicy, call: Call, attempt: Attempt, error: unknown): void {
  if (attempt.settled) return;
  settle(
    policy,
    call,
    attempt,
    !attempt.abandoned && isDependencyFailure(classify(error, policy.options.classifiers)),
    false,
  );
}

/**
 * Counts an attempt's outcome once (an abandoned one counts nothing), reports a probe's at once,
 * and gives back its permit (lease, local slot). `retrySucceeded`: it answered on a granted retry.
 */
function settle(
  policy: CallPolicy,
  call: Call,
  attempt: Attempt,
  dependencyFailed: boolean,
  retrySucceeded: boolean,
): void {
  if (attempt.settled) return;
  attempt.settled = true;
  const { runtime, fleet } = policy;
  runtime.timeouts.delete(attempt);
  const { probe, permit } = attempt.admission;
  if (permit) releasePermit(runtime.leases, fleet, permit);
  if (attempt.onCallerAbort) call.signal?.removeEventListener('abort', attempt.onCallerAbort);
  if (attempt.abandoned) {
    probeAbandoned(fleet, probe);
    return;
  }
  const now = runtime.clock.now();
  fleet.recordOutcome(now, now - attempt.startedAt, dependencyFailed);
  if (retrySucceeded) fleet.recordRetrySucceeded(now);
  if (probe !== undefined) probeSettled(runtime, fleet, probe, !dependencyFailed);
}

/**
 * An admission that will not be used (the caller aborted meanwhile, the deadline passed, or a hedge
 * came too late): its permit is given back, and its probe kept for the next attempt.
 */
export function abandonAdmission(policy: CallPolicy, admission: Admission): void {
  if (admission.permit) releasePermit(policy.runtime.leases, policy.fleet, admission.permit);
  probeUnsent(policy.fleet, admission.probe);
}
