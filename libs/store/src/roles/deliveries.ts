import type {
  DeadLetterQueuePage,
  DeadLetterQueueTerms,
  DeadLetterRetention,
  DeliveryAttemptInput,
  DeliveryAttemptOutcome,
  StoredDeadLetter,
} from '@sluice/core';

export type {
  DeadLetterQueuePage,
  DeadLetterQueueTerms,
  DeadLetterRetention,
  DeliveryAttemptOutcome,
  NotedDeadLetterQueue,
  StoredDeadLetter,
} from '@sluice/core';

/** One queue of one namespace. */
export interface QueueRef {
  namespace: string;
  queue: string;
}

/** One failed delivery of a message, with the terms of its queue's dead letters. */
export type DeliveryAttemptRecord = DeliveryAttemptInput;

export interface DeadLetterPageRequest {
  limit: number;
  /** The `next` cursor of the previous page. */
  after?: string;
  retention: DeadLetterRetention;
}

export interface StoredDeadLetterPage {
  items: StoredDeadLetter[];
  next: string | null;
  depth: number;
}

/** Delivery attempt counts per message, and the dead letters of each queue. */
export interface DeliveryStore {
  /** Counts one failed delivery; the failure of attempt `maxAttempts` parks the message. */
  recordDeliveryAttempt(ref: QueueRef, attempt: DeliveryAttemptRecord): Promise<DeliveryAttemptOutcome>;

  /** The message is done: its attempt count is forgotten. False when there was none. */
  ackDelivery(ref: QueueRef, messageId: string): Promise<boolean>;

  /** A page of dead letters, oldest first (pruning those past their retention). */
  listDeadLetters(ref: QueueRef, page: DeadLetterPageRequest): Promise<StoredDeadLetterPage>;

  /** Removes a dead letter and resets its message's attempt count; null when unknown. */
  redriveDeadLetter(ref: QueueRef, messageId: string): Promise<StoredDeadLetter | null>;

  /** Deletes a dead letter and its message's attempt count; false when unknown. */
  purgeDeadLetter(ref: QueueRef, messageId: string): Promise<boolean>;

  /** How many dead letters the queue holds (pruning those past their retention). */
  countDeadLetters(ref: QueueRef, retention: DeadLetterRetention): Promise<number>;

  /**
   * Notes that the queue parked a dead letter, in its namespace's list of such queues (another
   * slot than the queue's: a call of its own, after the parking).
   */
  noteDeadLetterQueue(ref: QueueRef, terms: DeadLetterQueueTerms): Promise<void>;

  /** A page of the namespace's queues that parked dead letters within the retention, by name. */
  listDeadLetterQueues(
    namespace: string,
    page: { retentionMs: number; limit: number; after?: string },
  ): Promise<DeadLetterQueuePage>;
}
