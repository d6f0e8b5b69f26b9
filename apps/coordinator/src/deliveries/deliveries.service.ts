import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { backoffDelay, seededRandom, type RandomSource } from '@sluice/core';
import { MAX_PAYLOAD_BYTES, type DeliveryAttemptRequest, type DeliveryAttemptResponse } from '@sluice/protocol';
import type { QueueRef, Store } from '@sluice/store';
import { payloadTooLarge } from '../common/api-error';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';
import { DeadLetterDepth } from './dead-letter-depth.service';
import { ATTEMPT_RETENTION_MS, DEAD_LETTERS, DEAD_LETTER_QUEUES } from './delivery-limits';

/**
 * Counts failed deliveries under the queue's policy and parks a message past maxAttempts. With the
 * delivery's own `attempt`, recording it again changes nothing and answers the same: the store
 * keeps the count, and the backoff's jitter is drawn from the message and the count, so a repeat
 * gets the same delay.
 */
@Injectable()
export class DeliveriesService {
  private readonly logger = new Logger('Deliveries');

  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly depth: DeadLetterDepth,
    private readonly metrics: MetricsService,
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
      ...(request.attempt !== undefined ? { attempt: request.attempt } : {}),
    });
    if (outcome.deadLetter) {
      this.depth.observe(ref, outcome.depth);
      // Listed for operators; a repeat of this attempt (after a 503 here) notes it again.
      await this.store.noteDeadLetterQueue(ref, DEAD_LETTER_QUEUES);
    }
    if (outcome.dropped > 0) this.reportDropped(ref, request.messageId, outcome.dropped);
    const random = request.attempt === undefined ? Math.random : jitterOf(ref, request.messageId, outcome.attempt);
    return {
      attempt: outcome.attempt,
      maxAttempts: policy.maxAttempts,
      deadLetter: outcome.deadLetter,
      delayMs: outcome.deadLetter ? 0 : backoffDelay(policy.backoff, { attempt: outcome.attempt }, random),
    };
  }

  /** Dead letters the queue's caps dropped as `messageId` was parked: counted and logged, never silent. */
  private reportDropped(ref: QueueRef, messageId: string, dropped: number): void {
    this.metrics.deadLettersDropped.inc({ namespace: ref.namespace, queue: ref.queue }, dropped);
    this.logger.warn(
      `queue ${ref.namespace}/${ref.queue} is at its dead-letter caps (${DEAD_LETTERS.maxLength} entries, ` +
        `${DEAD_LETTERS.maxBytes} bytes): parking ${messageId} dropped the ${dropped} oldest`,
    );
  }

  async ack(ref: QueueRef, messageId: string): Promise<void> {
    await this.store.ackDelivery(ref, messageId);
  }
}

/** A jitter source fixed by the message and its count: the same attempt always waits the same delay. */
function jitterOf(ref: QueueRef, messageId: string, attempt: number): RandomSource {
  const digest = createHash('sha256').update(`${ref.namespace}/${ref.queue}/${messageId}#${attempt}`).digest();
  return seededRandom(digest.readUInt32BE(0));
}
