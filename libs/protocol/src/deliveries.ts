/**
 * Delivery attempts and dead letters: /v1/{ns}/queues/{queue}, /admin/v1/{ns}/queues and
 * /admin/v1/{ns}/queues/{queue}/dead-letters.
 */

export interface DeliveryAttemptRequest {
  messageId: string;
  error?: string;
  payload?: unknown;
  attempt?: number;
}

export interface DeliveryAttemptResponse {
  /** The number of this failed attempt (1 = the first delivery). */
  attempt: number;
  maxAttempts: number;
  /** True when the message is parked in the dead-letter store: do not deliver it again. */
  deadLetter: boolean;
  /** The backoff before the next delivery; 0 once dead-lettered. */
  delayMs: number;
}

export interface DeliveryAckRequest {
  messageId: string;
}

/** A parked message. Its `id` is its message id: a message has at most one dead letter per queue. */
export interface DeadLetter {
  id: string;
  messageId: string;
  payload: unknown;
  error: string | null;
  attempts: number;
  deadLetteredAt: number;
  firstAttemptAt: number;
}

export interface DeadLetterPage {
  items: DeadLetter[];
  /** The cursor of the next page; null on the last page. */
  next: string | null;
}

/** One queue of GET /admin/v1/{ns}/queues: a queue that holds dead letters. */
export interface QueueItem {
  queue: string;
  deadLetters: number;
  lastDeadLetteredAt: number;
}

export interface QueueList {
  items: QueueItem[];
  next: string | null;
}
