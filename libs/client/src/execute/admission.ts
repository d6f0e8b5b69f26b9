import { backoffDelay } from '@sluice/core';
import type { BreakerState } from '@sluice/protocol';
import type { Admission, AdmitAnswer, LimitRefusal } from '../decide/decider';
import { BreakerOpenError, DeadlineExceededError, GiveUpError, LimitedError } from '../errors';
import { sleep } from '../abortable-sleep';
import type { Call } from './call';
import type { CallPolicy } from './call-policy';

/** True when an attempt needs no admission: an unlimited dependency through a closed breaker. */
export function goesStraightOut(policy: CallPolicy, state: BreakerState): boolean {
  return !policy.fleet.limited && (state === 'closed' || state === 'forced_closed');
}

/**
 * Lets an attempt out when the breaker is not closed (only as a probe of a half-open one) or the
 * dependency is limited: the decider answers (the coordinator, or the fallback when it cannot). A
 * limit's refusal is waited out within the deadline (`whenLimited: 'wait'`) or thrown; any other
 * refusal is thrown as the give-up it is.
 */
export async function admit(policy: CallPolicy, call: Call, state: BreakerState): Promise<Admission> {
  const { fleet, runtime } = policy;
  const cost = checkedCost(policy, call);
  for (let refusals = 1; ; refusals++) {
    if (goesStraightOut(policy, state)) return { allow: true, probe: undefined, permit: undefined };
    if (state === 'open' || state === 'forced_open') {
      throw refused(policy, call, {
        allow: false,
        reason: 'breaker_open',
        breaker: runtime.decider.breakerFacts(fleet, runtime.clock.now()),
      });
    }
    const answer = await runtime.decider.admit(fleet, cost, call.deadlineAt);
    if (answer.allow) return answer;
    if (answer.reason !== 'rate_limited' && answer.reason !== 'concurrency_limited')
      throw refused(policy, call, answer);
    await waitLimited(policy, call, answer, refusals);
    state = runtime.decider.breakerState(fleet, runtime.clock.now());
  }
}

/** The give-up a refusal is (a limit's refusal only once it is not waited out). */
export function refused(policy: CallPolicy, call: Call, answer: Exclude<AdmitAnswer, Admission>): GiveUpError {
  return policy.givingUp(call, giveUpOf(policy.name, call, answer));
}

function giveUpOf(name: string, call: Call, answer: Exclude<AdmitAnswer, Admission>): GiveUpError {
  switch (answer.reason) {
    case 'breaker_open':
      return new BreakerOpenError(name, answer.breaker, call.lastError, call.launched);
    case 'deadline_exceeded':
      return new DeadlineExceededError(name, call.lastError, call.launched);
    case 'rate_limited':
    case 'concurrency_limited':
      return new LimitedError(
        name,
        answer.reason,
        Math.max(0, Math.ceil(answer.retryAfterMs)),
        call.lastError,
        call.launched,
      );
    default:
      return new GiveUpError(name, answer.reason, call.lastError, call.launched);
  }
}

/**
 * After a limit's refusal (the `n`th of this admission): waits before asking again, or throws a
 * LimitedError when the dependency is set to fail at once or the wait would not end before the
 * deadline. A rate limit's `retryAfterMs` is exact; a concurrency limit's is the earliest lease
 * expiry, while slots are usually freed much sooner, so the wait is a jittered backoff below it,
 * cut short when one of this process's attempts gives its slot back (first come, first woken).
 */
async function waitLimited(policy: CallPolicy, call: Call, refusal: LimitRefusal, n: number): Promise<void> {
  const { fleet, runtime } = policy;
  const retryAfterMs = Math.max(0, Math.ceil(refusal.retryAfterMs));
  let waitMs = retryAfterMs;
  if (refusal.reason === 'concurrency_limited') {
    const backoff = fleet.policy?.backoff ?? fleet.fallbackPolicy.backoff;
    waitMs = Math.min(retryAfterMs, backoffDelay(backoff, { attempt: n }, runtime.random));
  }
  waitMs = Math.max(1, waitMs);
  if (policy.options.whenLimited === 'fail' || runtime.clock.now() + waitMs >= call.deadlineAt) {
    throw refused(policy, call, refusal);
  }
  if (refusal.reason === 'concurrency_limited') await fleet.waitForSlot(waitMs, call.signal);
  else await sleep(waitMs, call.signal);
}

/** The call's cost, checked against the rate limit's burst when one is known (the coordinator refuses more as bad input). */
function checkedCost(policy: CallPolicy, call: Call): number {
  const burst = policy.fleet.policy?.rateLimit?.burst;
  if (burst !== undefined && call.cost > burst) {
    throw new RangeError(`${policy.name}: a cost of ${call.cost} exceeds the rate limit's burst (${burst})`);
  }
  return call.cost;
}
