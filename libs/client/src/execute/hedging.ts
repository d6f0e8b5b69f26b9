import type { AttemptContext } from '../execute-options';
import { within } from '../within';
import { NO_ADMISSION, type Admission } from '../decide/decider';
import { sendAttempt, type Attempt } from './attempt';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';
import { abandonAdmission, failed, launch, succeeded } from './outcomes';

/** How an attempt ended, as a value. */
type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A hedged round: the first attempt, and after the hedge delay without an answer a second one (if
 * the budget grants it as a retry, and a limited dependency admits it without waiting); the first
 * success wins and the other attempt is aborted. When both fail, the round fails with the later failure.
 */
export async function hedgedRound<T>(
  policy: CallPolicy,
  fn: (context: AttemptContext) => PromiseLike<T> | T,
  call: Call,
  admission: Admission,
  start: number,
  delayMs: number,
): Promise<T> {
  const first = launch(policy, call, fn, admission, start, false);
  const firstOutcome = outcomeOf<T>(first);
  const early = await within(firstOutcome, delayMs);
  if (early) return valueOf(early);
  const hedge = await hedgeAdmission(policy, call);
  if (!hedge || first.settled) {
    call.retryGranted = false;
    if (hedge) abandonAdmission(policy, hedge);
    return valueOf(await firstOutcome);
  }
  policy.retrying({ dependency: policy.name, attempt: call.launched + 1, delayMs: 0, error: undefined, hedge: true });
  const second = launch(policy, call, fn, hedge, policy.runtime.clock.now(), true);
  const outcome = await firstSuccess([firstOutcome, outcomeOf<T>(second)]);
  for (const attempt of [first, second]) {
    if (!attempt.settled) attempt.cancel(new DOMException('another attempt answered first', 'AbortError'));
  }
  return valueOf(outcome);
}

/** The hedge's admission: a granted retry, and a limited dependency's admission asked once; undefined for no hedge. */
async function hedgeAdmission(policy: CallPolicy, call: Call): Promise<Admission | undefined> {
  const { runtime, fleet, options } = policy;
  const remaining = call.deadlineAt - runtime.clock.now();
  if (remaining <= 0 || call.launched >= options.maxAttempts) return undefined;
  const request = { attempt: call.launched, idempotent: true, deadlineMs: Math.floor(remaining) };
  const verdict = await runtime.decider.retry(fleet, request);
  if (!verdict.allow) return undefined;
  const answer = fleet.limited ? await runtime.decider.admit(fleet, call.cost, call.deadlineAt) : NO_ADMISSION;
  if (!answer.allow) return undefined;
  // A hedge is never a probe (the breaker half-opened meanwhile), and never goes out past the deadline.
  if (answer.probe !== undefined || call.deadlineAt <= runtime.clock.now()) {
    abandonAdmission(policy, answer);
    return undefined;
  }
  call.retryGranted = verdict.reason === 'granted';
  return answer;
}

/** Sends one attempt and counts how it ended. */
function outcomeOf<T>(attempt: Attempt): Promise<Outcome<T>> {
  return sendAttempt<Outcome<T>>(attempt, attempt.policy.runtime.timeouts, answeredOutcome, failedOutcome);
}

function answeredOutcome<T>(attempt: Attempt, value: unknown): Outcome<T> {
  succeeded(attempt.policy, attempt.call, attempt);
  return { ok: true, value: value as T };
}

function failedOutcome<T>(attempt: Attempt, error: unknown): Outcome<T> {
  failed(attempt.policy, attempt.call, attempt, error);
  return { ok: false, error };
}

/** The first successful outcome; the last failure when none succeeds. */
function firstSuccess<T>(outcomes: Array<Promise<Outcome<T>>>): Promise<Outcome<T>> {
  return new Promise((resolve) => {
    let pending = outcomes.length;
    for (const outcome of outcomes) {
      void outcome.then((ended) => {
        if (ended.ok || --pending === 0) resolve(ended);
      });
    }
  });
}

function valueOf<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}
