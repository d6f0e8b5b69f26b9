import { MAX_DURATION_MS, MAX_RETRY_ATTEMPT, type RetryRequest } from '@sluice/protocol';
import { sleep } from '../abortable-sleep';
import { classify, retryDenial, type Failure } from '../classification';
import { BreakerOpenError, DeadlineExceededError, GiveUpError, type GiveUpReason } from '../errors';
import type { RetryVerdict } from '../decide/decider';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';

/**
 * After a failed round: gives up (throws) or waits, then the next round may go. The dependency's
 * Retry-After is waited out before the ask, so the budget counts the retry when it is about to be
 * sent (a grant held through the wait would be counted as failing until its success is reported)
 * and the fleet decides on what it knows then; the granted backoff follows. A call that waited a
 * Retry-After and is denied `budget_exhausted` waits for the budget once (see `budgetWait`). A
 * failure that is not retriable at all is rethrown as it is.
 */
export async function retryStep(policy: CallPolicy, call: Call, error: unknown): Promise<void> {
  const { name, options, runtime } = policy;
  const { clock } = runtime;
  const failure = classify(error, options.classifiers);
  const denial = retryDenial(failure, call.idempotent, call.key !== undefined);
  if (denial === 'not_retriable') throw error;
  const giveUp = (reason: GiveUpReason) => policy.givingUp(call, new GiveUpError(name, reason, error, call.launched));
  const deadlineExceeded = () => policy.givingUp(call, new DeadlineExceededError(name, error, call.launched));
  if (denial) throw giveUp(denial);
  if (failure.retriedDownstream) throw giveUp('downstream_retried');
  if (call.launched >= options.maxAttempts) throw giveUp('max_attempts');
  if (call.request && call.request.attempt > 1 && !options.retryWhenServingRetry) throw giveUp('upstream_retry');
  if (call.deadlineAt <= clock.now()) throw deadlineExceeded();
  const retryAfterMs = Math.ceil(failure.retryAfterMs ?? 0);
  if (retryAfterMs > 0) {
    if (clock.now() + retryAfterMs >= call.deadlineAt) throw deadlineExceeded();
    await sleep(retryAfterMs, call.signal);
  }
  let verdict = await askForRetry(policy, call, failure);
  if (verdict === undefined) throw deadlineExceeded();
  const budgetWaitMs = budgetWait(verdict, retryAfterMs);
  if (budgetWaitMs !== undefined && clock.now() + budgetWaitMs < call.deadlineAt) {
    await sleep(budgetWaitMs, call.signal);
    verdict = await askForRetry(policy, call, failure);
    if (verdict === undefined) throw deadlineExceeded();
  }
  if (!verdict.allow) {
    if (verdict.reason === 'breaker_open') {
      const breaker = verdict.breaker ?? runtime.decider.breakerFacts(policy.fleet, clock.now());
      throw policy.givingUp(call, new BreakerOpenError(name, breaker, error, call.launched));
    }
    if (verdict.reason === 'deadline_exceeded') throw deadlineExceeded();
    throw giveUp(verdict.reason as GiveUpReason);
  }
  const delayMs = verdict.delayMs;
  if (clock.now() + delayMs >= call.deadlineAt) throw deadlineExceeded();
  // Only a retry the budget counted is given back when it succeeds (not one a shadow policy let through).
  call.retryGranted = verdict.reason === 'granted';
  policy.retrying({ dependency: name, attempt: call.launched + 1, delayMs, error, hedge: false });
  await sleep(delayMs, call.signal);
}

/**
 * How long a denied call waits for the fleet's budget before it asks once more, or undefined for
 * not at all: only after a `budget_exhausted` denial that says when the same ask could be granted
 * (its window ageing out), and only for a call that the dependency asked to come back later
 * (Retry-After), for no longer than it asked. Such a call was prepared to wait; a call that failed
 * without one (an outage, typically) still fails at once.
 */
function budgetWait(verdict: RetryVerdict, retryAfterMs: number): number | undefined {
  const waitMs = verdict.budgetRetryAfterMs;
  if (verdict.allow || verdict.reason !== 'budget_exhausted' || waitMs === undefined) return undefined;
  return retryAfterMs > 0 && waitMs <= retryAfterMs ? waitMs : undefined;
}

/** Asks the decider for the call's next retry; undefined when no time is left to ask. */
async function askForRetry(policy: CallPolicy, call: Call, failure: Failure): Promise<RetryVerdict | undefined> {
  const remaining = call.deadlineAt - policy.runtime.clock.now();
  if (remaining <= 0) return undefined;
  return policy.runtime.decider.retry(policy.fleet, retryRequest(call.launched, remaining, failure));
}

/**
 * The body of POST /retry for a failure after `launched` attempts. Its `retryAfterMs` is left out:
 * the dependency's Retry-After has been waited out before the ask.
 */
export function retryRequest(launched: number, remainingMs: number, failure: Failure): RetryRequest {
  return {
    attempt: Math.min(launched, MAX_RETRY_ATTEMPT),
    idempotent: true,
    deadlineMs: Math.min(Math.floor(remainingMs), MAX_DURATION_MS),
    ...(failure.status !== undefined ? { status: failure.status } : { error: failure.error ?? 'other' }),
  };
}
