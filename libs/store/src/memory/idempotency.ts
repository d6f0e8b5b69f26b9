import {
  claimIdempotencyEntry,
  completeIdempotencyEntry,
  releaseIdempotencyEntry,
  type IdempotencyEntry,
} from '@sluice/core';
import type { IdempotencyStore } from '../roles/idempotency';
import { assertStorableResponse } from '../stored-response';
import type { MemoryContext } from './context';
import { ExpiringMap } from './expiring-map';

/**
 * Idempotency keys in memory: the libs/core claim, complete and release over expiring records.
 * Nothing is durable: the records live as long as the process.
 */
export function memoryIdempotency(context: MemoryContext): IdempotencyStore {
  const { keys } = context;
  const records = new ExpiringMap<IdempotencyEntry>();
  const recordKey = (ref: { namespace: string; key: string }) => keys.idempotency(ref.namespace, ref.key).record;
  return {
    async claimIdempotencyKey(ref, claim) {
      const now = context.now();
      const key = recordKey(ref);
      // A kept entry may come back with its lease cut after a clock step back (claimIdempotencyEntry).
      const verdict = claimIdempotencyEntry(records.get(key, now), claim, now);
      switch (verdict.verdict) {
        case 'claimed':
        case 'recovered':
          records.set(key, verdict.entry, verdict.entry.expiresAt, now);
          return { outcome: verdict.verdict, leaseExpiresAt: verdict.entry.leaseExpiresAt, durable: false };
        case 'resumed':
          records.set(key, verdict.entry, verdict.entry.expiresAt, now);
          return {
            outcome: 'resumed',
            token: verdict.entry.token,
            leaseExpiresAt: verdict.entry.leaseExpiresAt,
            recovered: verdict.entry.recovered ?? false,
            durable: false,
          };
        case 'completed':
          return { outcome: 'completed', response: verdict.entry.response ?? '' };
        case 'in_flight':
          records.set(key, verdict.entry, verdict.entry.expiresAt, now);
          return { outcome: 'in_flight', leaseRemainingMs: verdict.leaseRemainingMs };
        case 'mismatch':
          return { outcome: 'mismatch' };
      }
    },

    async completeIdempotencyKey(ref, completion) {
      assertStorableResponse(completion.response);
      const now = context.now();
      const key = recordKey(ref);
      const completed = completeIdempotencyEntry(records.get(key, now), completion.token, completion.response, now);
      if (!completed) return 'lease_lost';
      records.set(key, completed, completed.expiresAt, now);
      return 'completed';
    },

    async releaseIdempotencyKey(ref, token) {
      const key = recordKey(ref);
      const outcome = releaseIdempotencyEntry(records.get(key, context.now()), token);
      if (outcome === 'released') records.delete(key);
      return outcome;
    },

    async readIdempotencyKey(ref) {
      const entry = records.get(recordKey(ref), context.now());
      if (!entry) return null;
      return {
        state: entry.state,
        createdAt: entry.createdAt,
        expiresAt: entry.expiresAt,
        ...(entry.state === 'in_flight' ? { leaseExpiresAt: entry.leaseExpiresAt } : {}),
        ...(entry.completedAt !== undefined ? { completedAt: entry.completedAt } : {}),
      };
    },
  };
}
