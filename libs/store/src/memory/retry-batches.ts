import { readRetryBudget } from '@sluice/core';
import type { DecisionStore, RetryBudgetOutcome } from '../roles/decisions';
import type { MemoryContext } from './context';
import { memoryDecisions } from './decisions';

/** A batch of retry asks in memory: each decided as decideRetry decides it, in order, in one synchronous step. */
export function memoryRetryBatches(context: MemoryContext): Pick<DecisionStore, 'decideRetries'> {
  const { decideRetry } = memoryDecisions(context);
  return {
    async decideRetries(ref, request) {
      const { asks, ...policy } = request;
      if (asks.length === 0) throw new RangeError('decideRetries needs at least one ask');
      // No await between the asks: decideRetry's work is synchronous, so nothing interleaves.
      const pending = asks.map((ask): Promise<RetryBudgetOutcome> | RetryBudgetOutcome => {
        if (!ask.read) return decideRetry(ref, { ...policy, ...ask });
        const read = readRetryBudget(context.existing(ref), policy.budget, context.now());
        context.publishTransitions(ref, read.breaker);
        return {
          verdict: 'granted',
          delayMs: ask.delayMs,
          budget: read.budget,
          retryAfterMs: null,
          breaker: read.breaker,
        };
      });
      const outcomes = await Promise.all(pending);
      return {
        decisions: outcomes.map(({ verdict, delayMs, budget, retryAfterMs }, i) => ({
          verdict: asks[i].read ? null : verdict,
          delayMs,
          budget,
          retryAfterMs,
        })),
        // The first ask saw the breaker's transitions, if any: the batch's breaker.
        breaker: outcomes[0].breaker,
      };
    },
  };
}
