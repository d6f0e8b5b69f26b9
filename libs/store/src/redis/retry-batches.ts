import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { SluiceKeys } from '../keys';
import { retryOutcomeTtlMs } from '../request-outcomes';
import type { DecisionStore, RetryAskOutcome } from '../roles/decisions';
import { breakerFromReply } from './breakers';
import { RETRY_DECISION_VALUES as PER_ASK, budgetFromReply, budgetModeArgs } from './budget-reply';
import { retryDecisionFromReply } from './decisions';
import type { ScriptRunner } from './script-runner';

/** A `read` ask's answer: the budget as it stood, nothing decided. */
function budgetReadFromReply(
  reply: Array<string | number>,
  at: number,
  delayMs: number,
  windowSeconds: number,
): RetryAskOutcome {
  return { verdict: null, delayMs, budget: budgetFromReply(reply, at + 1, windowSeconds), retryAfterMs: null };
}

/** A batch of retry asks for one dependency: decide_retries-N.lua, one call. */
export function redisRetryBatches(scripts: ScriptRunner, keys: SluiceKeys): Pick<DecisionStore, 'decideRetries'> {
  return {
    async decideRetries(ref, request) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const requests = keys.dependencyRequests(ref.namespace, ref.dependency);
      const { budget, asks } = request;
      if (asks.length === 0) throw new RangeError('decideRetries needs at least one ask');
      const askKeys: string[] = [dependency.budget, dependency.breaker, dependency.latency];
      const args: Array<string | number> = [
        budget.ratio,
        budget.minRetriesPerSecond,
        budget.windowSeconds,
        dependency.events,
        ref.dependency,
        request.latencyWindowSeconds ?? DEFAULT_DEPENDENCY_POLICY.breaker.windowSeconds,
        retryOutcomeTtlMs(budget.windowSeconds),
        ...budgetModeArgs(budget),
      ];
      for (const ask of asks) {
        askKeys.push(requests.retry(ask.requestId));
        args.push(ask.delayMs, ask.deadlineMs ?? '', ask.requestId ?? '', ask.read ? 'r' : 'd');
      }
      const reply = await scripts.runWithKeys('decide_retries', askKeys, args);
      const decisions = asks.map((ask, i) =>
        ask.read
          ? budgetReadFromReply(reply, i * PER_ASK, ask.delayMs, budget.windowSeconds)
          : retryDecisionFromReply(reply, i * PER_ASK, budget.windowSeconds),
      );
      return { decisions, breaker: breakerFromReply(reply, asks.length * PER_ASK) };
    },
  };
}
