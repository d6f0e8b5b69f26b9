import { createHash } from 'node:crypto';
import { MAX_DELIVERY_ERROR_LENGTH } from '@sluice/protocol';
import type { CoordinatorClient } from './coordinator-client';
import { isLeaseLostError } from './errors';

/** A message as a broker delivered it: its id (stable across redeliveries) and its payload. */
export interface DeliveryMessage<P = unknown> {
  id: string;
  payload?: P;
  /**
   * Which delivery of the message this is, 1 for the first, when the broker counts them (SQS
   * `ApproximateReceiveCount`; RabbitMQ's `x-delivery-count` + 1). A failure is then recorded as
   * that attempt: recording it again changes nothing, so the SDK can ask again when the
   * coordinator does not answer, and a redelivery of the same delivery is not counted twice.
   */
  deliveryCount?: number;
}

export interface DeliveryContext {
  messageId: string;
  /** An earlier delivery of this message held it and vanished: its work may have partly run. */
  recovered: boolean;
}

/**
 * What became of one delivery. `ack` says what to tell the broker: true, acknowledge (done, or
 * parked in the dead letters); false, deliver again after `delayMs`.
 */
export type DeliveryOutcome<T> =
  | { status: 'processed'; ack: true; value: T; recovered: boolean }
  | { status: 'duplicate'; ack: true }
  | { status: 'retry'; ack: false; attempt: number; maxAttempts: number; delayMs: number; error: unknown }
  | { status: 'dead_lettered'; ack: true; attempt: number; maxAttempts: number; error: unknown }
  | { status: 'in_flight'; ack: false; delayMs: number };

export interface DeliveryConsumerOptions {
  /** How long one handling holds the message before another delivery may take it over. Default 60 000 ms. */
  leaseMs?: number;
  /** How long a processed message is remembered (its redeliveries are acked unrun). Coordinator default: 24 h. */
  retentionSeconds?: number;
  /** Told about bookkeeping that failed after the work ran (a lost lease, an ack the coordinator missed). */
  onError?: (error: unknown, messageId: string) => void;
}

/**
 * A consumer of one queue: counts failed deliveries, backs off, acks and dead-letters, and uses the
 * message id as an idempotency key, so that a message whose work already completed is acked
 * without running the work again. At-least-once delivery plus this consumer: an exactly-once effect.
 *
 * @example
 * const orders = deliveries(client, 'orders');
 * broker.consume('orders', async (message) => {
 *   const outcome = await orders.handle(
 *     { id: message.id, payload: message.body, deliveryCount: message.receiveCount },
 *     (order) => ship(order),
 *   );
 *   if (outcome.ack) message.ack();
 *   else message.nack({ delayMs: outcome.delayMs });
 * });
 */
export class DeliveryConsumer {
  constructor(
    private readonly client: CoordinatorClient,
    readonly queue: string,
    private readonly options: DeliveryConsumerOptions = {},
  ) {}

  /**
   * Handles one delivery: runs `work` unless the message was already processed or is being
   * processed; on failure records the attempt and says when to retry, or that it was parked.
   *
   * @example
   * const outcome = await orders.handle(message, async (payload, { recovered }) => {
   *   if (recovered) await reconcile(payload);
   *   return charge(payload);
   * });
   */
  async handle<T, P = unknown>(
    message: DeliveryMessage<P>,
    work: (payload: P, context: DeliveryContext) => Promise<T>,
  ): Promise<DeliveryOutcome<T>> {
    const { deliveryCount } = message;
    if (deliveryCount !== undefined && !(Number.isSafeInteger(deliveryCount) && deliveryCount >= 1)) {
      throw new TypeError(`deliveryCount must be an integer from 1, got ${deliveryCount}`);
    }
    const key = this.idempotencyKey(message.id);
    const claim = await this.client.claimIdempotencyKey(key, {
      fingerprint: `delivery:${key}`,
      leaseMs: this.options.leaseMs ?? 60_000,
      retentionSeconds: this.options.retentionSeconds,
    });
    if (claim.state === 'completed') {
      await this.ack(message.id);
      return { status: 'duplicate', ack: true };
    }
    if (claim.state === 'in_flight') return { status: 'in_flight', ack: false, delayMs: claim.retryAfterMs };
    if (claim.state === 'mismatch')
      throw new Error(`idempotency key ${key} is used by something other than deliveries`);

    let value: T;
    try {
      value = await work(message.payload as P, { messageId: message.id, recovered: claim.recovered });
    } catch (error) {
      await this.client.releaseIdempotencyKey(key, claim.token).catch((releaseError: unknown) => {
        if (!isLeaseLostError(releaseError)) throw releaseError;
      });
      const recorded = await this.client.recordDeliveryAttempt(this.queue, {
        messageId: message.id,
        error: describe(error),
        ...(message.payload === undefined ? {} : { payload: message.payload }),
        ...(deliveryCount === undefined ? {} : { attempt: deliveryCount }),
      });
      const { attempt, maxAttempts } = recorded;
      return recorded.deadLetter
        ? { status: 'dead_lettered', ack: true, attempt, maxAttempts, error }
        : { status: 'retry', ack: false, attempt, maxAttempts, delayMs: recorded.delayMs, error };
    }
    try {
      await this.client.completeIdempotencyKey(key, claim.token, {
        status: 200,
        headers: {},
        body: '',
        bodyEncoding: 'utf8',
      });
    } catch (error) {
      this.options.onError?.(error, message.id);
    }
    await this.ack(message.id);
    return { status: 'processed', ack: true, value, recovered: claim.recovered };
  }

  /**
   * The idempotency key that stands for a message of this queue: `dlv:<queue>:<id>`, or the
   * id's SHA-256 in place of a long id.
   *
   * @example
   * orders.idempotencyKey('msg-42'); // 'dlv:orders:msg-42'
   */
  idempotencyKey(messageId: string): string {
    const readable = `dlv:${this.queue}:${messageId}`;
    if (readable.length <= 255) return readable;
    return `dlv:${this.queue}:h.${createHash('sha256').update(messageId).digest('base64url')}`;
  }

  /** The work is done: forget the attempt count. Missing it only leaves a count that expires. */
  private async ack(messageId: string): Promise<void> {
    try {
      await this.client.ackDelivery(this.queue, messageId);
    } catch (error) {
      this.options.onError?.(error, messageId);
    }
  }
}

/**
 * A {@link DeliveryConsumer} of `queue`.
 *
 * @example
 * const outcome = await deliveries(client, 'emails').handle(message, send);
 */
export function deliveries(
  client: CoordinatorClient,
  queue: string,
  options?: DeliveryConsumerOptions,
): DeliveryConsumer {
  return new DeliveryConsumer(client, queue, options);
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.slice(0, MAX_DELIVERY_ERROR_LENGTH);
}
