import type { SluiceKeys } from '../keys';
import type { IdempotencyRef, IdempotencyStore } from '../roles/idempotency';
import type { ReplicaWrites } from './replica-writes';
import { assertStorableResponse } from '../stored-response';
import { scriptOutcome } from './script-codes';
import type { ScriptRunner } from './script-runner';

/**
 * Idempotency keys, one hash each: the *_idempotency_key-1.lua scripts. A completion of a key whose
 * shard the deployment keeps on a replica (`replicas`) is acknowledged only once a replica holds it.
 */
export function redisIdempotency(scripts: ScriptRunner, keys: SluiceKeys, replicas: ReplicaWrites): IdempotencyStore {
  const record = (ref: IdempotencyRef) => keys.idempotency(ref.namespace, ref.key).record;
  return {
    async claimIdempotencyKey(ref, claim) {
      const key = record(ref);
      const [code, value, token, recovered] = await scripts.run(
        'claim_idempotency_key',
        key,
        claim.fingerprint,
        claim.token,
        claim.leaseMs,
        claim.retentionMs,
        claim.claimId ?? '',
      );
      const outcome = scriptOutcome('claim_idempotency_key', code, [
        'claimed',
        'recovered',
        'completed',
        'in_flight',
        'mismatch',
        'resumed',
      ]);
      const durable = replicas.waitsFor(key);
      switch (outcome) {
        case 'resumed':
          return { outcome, token, leaseExpiresAt: Number(value), recovered: recovered === 1, durable };
        case 'claimed':
        case 'recovered':
          return { outcome, leaseExpiresAt: Number(value), durable };
        case 'completed':
          return { outcome, response: String(value) };
        case 'in_flight':
          return { outcome, leaseRemainingMs: Number(value) };
        case 'mismatch':
          return { outcome };
      }
    },

    async completeIdempotencyKey(ref, completion) {
      assertStorableResponse(completion.response);
      const key = record(ref);
      const args = [key, completion.token, completion.response] as const;
      if (!replicas.waitsFor(key)) {
        const code = await scripts.run('complete_idempotency_key', ...args);
        return scriptOutcome('complete_idempotency_key', code, ['completed', 'lease_lost']);
      }
      const { reply, replicated } = await replicas.run('complete_idempotency_key', ...args);
      const outcome = scriptOutcome('complete_idempotency_key', reply, ['completed', 'lease_lost']);
      if (outcome === 'lease_lost') return outcome;
      return replicated ? 'replicated' : 'not_replicated';
    },

    async releaseIdempotencyKey(ref, token) {
      const code = await scripts.run('release_idempotency_key', record(ref), token);
      return scriptOutcome('release_idempotency_key', code, ['released', 'absent', 'lease_lost']);
    },

    async readIdempotencyKey(ref) {
      const reply = await scripts.run('read_idempotency_key', record(ref));
      if (reply.length === 0) return null;
      const [state, createdAt, expiresAt, leaseExpiresAt, completedAt] = reply;
      return {
        state,
        createdAt,
        expiresAt,
        ...(leaseExpiresAt >= 0 ? { leaseExpiresAt } : {}),
        ...(completedAt >= 0 ? { completedAt } : {}),
      };
    },
  };
}
