import { outcomeBudgetPolicy, type OutcomePolicy } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import type { SluiceKeys } from '../keys';
import { admitOutcomeTtlMs, retryOutcomeTtlMs } from '../request-outcomes';
import type { AdmitRequest, DecisionStore, RetryBudgetOutcome } from '../roles/decisions';
import { breakerFromReply } from './breakers';
import { RETRY_DECISION_VALUES, budgetFromReply, budgetModeArgs } from './budget-reply';
import { scriptOutcome } from './script-codes';
import type { ScriptRunner } from './script-runner';

/** The admission policy as admit-5.lua reads it (one cjson argument); a limit of 0 is no limit. */
function admissionPolicy({ breaker, rateLimit, concurrency }: AdmitRequest): string {
  return JSON.stringify({
    breaker,
    ...(rateLimit && rateLimit.rate > 0 ? { rateLimit } : {}),
    ...(concurrency && concurrency.limit > 0 ? { concurrency } : {}),
  });
}

/** The budget's rule as record_outcomes-8.lua reads it: every field given, the defaults filled in. */
function budgetRuleOf(policy: OutcomePolicy): {
  mode: string;
  ratio: number;
  maxRatio: number;
  minRetriesPerSecond: number;
} {
  const budget = outcomeBudgetPolicy(policy);
  const [mode, maxRatio] = budgetModeArgs(budget);
  return { mode, ratio: budget.ratio, maxRatio, minRetriesPerSecond: budget.minRetriesPerSecond };
}

/**
 * One decision of decide_retry-4.lua's or decide_retries-N.lua's reply, from `at`: code, the
 * budget (budgetFromReply), delayMs, retryAfterMs (-1: none).
 */
export function retryDecisionFromReply(
  reply: Array<string | number>,
  at: number,
  windowSeconds: number,
): Omit<RetryBudgetOutcome, 'breaker'> {
  const code = Number(reply[at]);
  const delayMs = Number(reply[at + 6]);
  const retryAfterMs = Number(reply[at + 7]);
  return {
    verdict: scriptOutcome('decide_retry', code, ['granted', 'budget_exhausted', 'deadline_exceeded', 'breaker_open']),
    delayMs,
    budget: budgetFromReply(reply, at + 1, windowSeconds),
    retryAfterMs: retryAfterMs >= 0 ? retryAfterMs : null,
  };
}

/** The decision path: decide_retry-4.lua, record_outcomes-8.lua and admit-5.lua. */
export function redisDecisions(scripts: ScriptRunner, keys: SluiceKeys): Omit<DecisionStore, 'decideRetries'> {
  return {
    async decideRetry(ref, request) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const { budget } = request;
      const reply = await scripts.run(
        'decide_retry',
        dependency.budget,
        dependency.breaker,
        dependency.latency,
        keys.dependencyRequests(ref.namespace, ref.dependency).retry(request.requestId),
        budget.ratio,
        budget.minRetriesPerSecond,
        budget.windowSeconds,
        request.delayMs,
        request.deadlineMs ?? '',
        dependency.events,
        ref.dependency,
        request.latencyWindowSeconds ?? DEFAULT_DEPENDENCY_POLICY.breaker.windowSeconds,
        request.requestId ?? '',
        retryOutcomeTtlMs(budget.windowSeconds),
        ...budgetModeArgs(budget),
      );
      return {
        ...retryDecisionFromReply(reply, 0, budget.windowSeconds),
        breaker: breakerFromReply(reply, RETRY_DECISION_VALUES),
      };
    },

    async recordOutcomes(ref, batch, policy) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const { reporter, requests, successes, failures, slow, retries, retriesSucceeded, probes, latency, reporters } =
        batch;
      const reply = await scripts.run(
        'record_outcomes',
        dependency.budget,
        dependency.outcomes,
        dependency.breaker,
        dependency.reporters,
        dependency.probes,
        dependency.latency,
        dependency.activeReporters,
        dependency.history,
        JSON.stringify({
          reporter,
          requests,
          successes,
          failures,
          slow,
          retries,
          retriesSucceeded,
          probes,
          ...(latency ? { latency } : {}),
          ...(reporters && reporters.length > 0 ? { reporters } : {}),
        }),
        JSON.stringify({
          budgetWindowSeconds: policy.budgetWindowSeconds,
          breaker: policy.breaker,
          budget: budgetRuleOf(policy),
        }),
        dependency.events,
        ref.dependency,
      );
      return { reporters: Number(reply[0]), breaker: breakerFromReply(reply, 1) };
    },

    async admit(ref, request) {
      const dependency = keys.dependency(ref.namespace, ref.dependency);
      const reply = await scripts.run(
        'admit',
        dependency.breaker,
        dependency.probes,
        dependency.rate,
        dependency.leases,
        keys.dependencyRequests(ref.namespace, ref.dependency).admit(request.requestId),
        admissionPolicy(request),
        request.probeToken,
        request.cost,
        request.leaseId,
        dependency.events,
        ref.dependency,
        request.requestId ?? '',
        admitOutcomeTtlMs(request.concurrency?.leaseMs ?? 0, request.breaker.probeLeaseMs),
      );
      const [code, probeExpiresAt, leaseExpiresAt, retryAfterMs, inUse] = reply.map(Number);
      const verdict = scriptOutcome('admit', code, ['granted', 'breaker_open', 'rate_limited', 'concurrency_limited']);
      // The token and id come from the reply: a repeat answers the kept grant's, not this request's.
      const [probeToken, leaseId] = [String(reply[5]), String(reply[6])];
      return {
        verdict,
        ...(probeExpiresAt >= 0 ? { probe: { token: probeToken, expiresAt: probeExpiresAt } } : {}),
        ...(leaseExpiresAt >= 0 ? { lease: { id: leaseId, expiresAt: leaseExpiresAt } } : {}),
        retryAfterMs: retryAfterMs >= 0 ? retryAfterMs : verdict === 'granted' ? 0 : null,
        leasesInUse: inUse >= 0 ? inUse : null,
        breaker: breakerFromReply(reply, 7),
      };
    },
  };
}
