import { Inject, Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import {
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  MAX_STORED_RESPONSE_BYTES,
  type IdempotencyClaimRequest,
  type IdempotencyClaimResponse,
  type IdempotencyCompleteRequest,
  type IdempotencyKeyView,
  type StoredResponse,
} from '@sluice/protocol';
import type { IdempotencyRef, Store } from '@sluice/store';
import { ApiError, notFound, payloadTooLarge, retryAfterSeconds, validationFailed } from '../common/api-error';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { storedResponseBytes, storedResponseProblems } from './stored-response';

/** The longest an in-flight answer tells a caller to wait before asking again. */
const IN_FLIGHT_RETRY_HINT_MS = 1000;

export interface ClaimAnswer {
  status: 200 | 201;
  body: IdempotencyClaimResponse;
}

/** Idempotency keys: claim, complete, release and read; the store decides, this maps to HTTP. */
@Injectable()
export class IdempotencyService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly metrics: MetricsService,
  ) {}

  async claim(ref: IdempotencyRef, request: IdempotencyClaimRequest): Promise<ClaimAnswer> {
    const policy = this.policies.forIdempotency(ref.namespace);
    const retentionSeconds = request.retentionSeconds ?? policy.retentionSeconds;
    if (retentionSeconds > policy.maxRetentionSeconds) {
      throw validationFailed([
        {
          field: 'retentionSeconds',
          message: `must not exceed ${policy.maxRetentionSeconds} in namespace "${ref.namespace}"`,
        },
      ]);
    }
    const token = randomBytes(16).toString('base64url');
    const outcome = await this.store.claimIdempotencyKey(ref, {
      fingerprint: request.fingerprint,
      token,
      leaseMs: request.leaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS,
      retentionMs: retentionSeconds * 1000,
      ...(request.claimId !== undefined ? { claimId: request.claimId } : {}),
    });
    const count = (result: string) => this.metrics.idempotencyRequests.inc({ namespace: ref.namespace, result });
    switch (outcome.outcome) {
      case 'claimed':
      case 'recovered': {
        count(outcome.outcome);
        const { leaseExpiresAt, durable } = outcome;
        const recovered = outcome.outcome === 'recovered';
        return { status: 201, body: { state: 'claimed', token, recovered, leaseExpiresAt, durable } };
      }
      case 'resumed': {
        // The caller's own claim again (its answer was lost): the token it won, nothing changed.
        count('resumed');
        const { token: held, recovered, leaseExpiresAt, durable } = outcome;
        return {
          status: 201,
          body: { state: 'claimed', token: held, recovered, resumed: true, leaseExpiresAt, durable },
        };
      }
      case 'completed':
        count('replayed');
        return { status: 200, body: { state: 'completed', response: JSON.parse(outcome.response) as StoredResponse } };
      case 'in_flight': {
        count('in_flight');
        const retryAfterMs = Math.min(outcome.leaseRemainingMs, IN_FLIGHT_RETRY_HINT_MS);
        throw new ApiError(
          409,
          'in_flight',
          'another request with this key is in flight',
          undefined,
          { 'retry-after': retryAfterSeconds(retryAfterMs) },
          { state: 'in_flight', retryAfterMs },
        );
      }
      case 'mismatch':
        count('mismatch');
        throw new ApiError(422, 'fingerprint_mismatch', 'the key was used for a different request', [
          { field: 'fingerprint', message: 'differs from the fingerprint the key was first claimed with' },
        ]);
    }
  }

  /** Stores the response; resolves whether a replica holds it too (the store's durability). */
  async complete(ref: IdempotencyRef, request: IdempotencyCompleteRequest): Promise<{ durable: boolean }> {
    const { status, headers, body, bodyEncoding } = request.response;
    const response: StoredResponse = { status, headers, body, bodyEncoding };
    const problems = storedResponseProblems(response);
    if (problems.length > 0) throw validationFailed(problems);
    if (storedResponseBytes(response) > MAX_STORED_RESPONSE_BYTES) {
      throw payloadTooLarge('response', MAX_STORED_RESPONSE_BYTES);
    }
    const outcome = await this.store.completeIdempotencyKey(ref, {
      token: request.token,
      response: JSON.stringify(response),
    });
    if (outcome === 'lease_lost') throw leaseLost();
    if (outcome === 'not_replicated') throw notReplicated();
    return { durable: outcome === 'replicated' };
  }

  async release(ref: IdempotencyRef, token: string): Promise<void> {
    if ((await this.store.releaseIdempotencyKey(ref, token)) === 'lease_lost') throw leaseLost();
  }

  async read(ref: IdempotencyRef): Promise<IdempotencyKeyView> {
    const record = await this.store.readIdempotencyKey(ref);
    if (!record) throw notFound(`no idempotency key "${ref.key}" in namespace "${ref.namespace}"`);
    return record;
  }
}

/**
 * The store waits for a replica on this key and none acknowledged the completion in time: it is
 * stored on the primary only, and a PUT again with the same token waits again (and answers 204
 * once a replica holds it). Not a 204, so a failover cannot lose a completion that was acknowledged.
 */
const notReplicated = (): ApiError =>
  new ApiError(
    503,
    'store_unavailable',
    'no replica of the store acknowledged the completion in time; PUT it again with the same token',
    undefined,
    { 'retry-after': '1' },
  );

const leaseLost = (): ApiError =>
  new ApiError(409, 'lease_lost', 'the token does not hold this key: it was taken over, completed or released', [
    { field: 'token', message: 'is not the current token of the key' },
  ]);
