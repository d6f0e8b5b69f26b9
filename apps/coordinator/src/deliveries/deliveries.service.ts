import { Inject, Injectable } from '@nestjs/common';
import { backoffDelay } from '@sluice/core';
import type { DeliveryAttemptRequest, DeliveryAttemptResponse } from '@sluice/protocol';
import type { QueueRef, Store } from '@sluice/store';
import { payloadTooLarge } from '../common/api-error';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { DeadLetterDepth } from './dead-letter-depth.service';
import { ATTEMPT_RETENTION_MS, DEAD_LETTERS, MAX_PAYLOAD_BYTES } from './delivery-limits';

/** Counts failed deliveries under the queue's policy and parks a message past maxAttempts. */
@Injectable()
export class DeliveriesService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly depth: DeadLetterDepth,
  ) {}

  async recordAttempt(ref: QueueRef, request: DeliveryAttemptRequest): Promise<DeliveryAttemptResponse> {
    const payload = request.payload === undefined ? null : JSON.stringify(request.payload);
    if (payload !== null && Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) {
      throw payloadTooLarge('payload', MAX_PAYLOAD_BYTES);
    }
    const policy = await this.policies.forQueue(ref.namespace, ref.queue);
    const outcome = await this.store.recordDeliveryAttempt(ref, {
      messageId: request.messageId,
      error: request.error || null,
      payload,
      maxAttempts: policy.maxAttempts,
      attemptRetentionMs: ATTEMPT_RETENTION_MS,
      deadLetters: DEAD_LETTERS,
    });
    if (outcome.deadLetter) this.depth.observe(ref, outcome.depth);
    return {
      attempt: outcome.attempt,
      maxAttempts: policy.maxAttempts,
      deadLetter: outcome.deadLetter,
      delayMs: outcome.deadLetter ? 0 : backoffDelay(policy.backoff, { attempt: outcome.attempt }),
    };
  }

  async ack(ref: QueueRef, messageId: string): Promise<void> {
    await this.store.ackDelivery(ref, messageId);
  }
}
