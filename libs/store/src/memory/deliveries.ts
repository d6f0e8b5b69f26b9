import {
  deadLetterPage,
  deadLetterQueuePage,
  noteDeadLetterQueue,
  pruneDeadLetters,
  recordDeliveryAttempt,
  removeDeadLetter,
  type AttemptCounter,
  type DeadLetterQueue,
} from '@sluice/core';
import type { DeliveryStore, QueueRef } from '../roles/deliveries';
import type { MemoryContext } from './context';
import { ExpiringMap } from './expiring-map';

/** Delivery attempts and dead letters in memory: the libs/core counter and queue over expiring Maps. */
export function memoryDeliveries(context: MemoryContext): DeliveryStore {
  const { keys } = context;
  const attempts = new ExpiringMap<AttemptCounter>();
  const queues = new ExpiringMap<DeadLetterQueue>();
  /** Namespace (its SluiceKeys `deadLetterQueues` key) → queue → latest parking. */
  const parkingQueues = new Map<string, Map<string, number>>();
  const queueKey = (ref: QueueRef) => keys.queue(ref.namespace, ref.queue).deadLetters;
  const queueOf = (ref: QueueRef, now: number) => queues.get(queueKey(ref), now);
  /** Takes a dead letter out, and its message's attempt count with it. */
  const remove = (ref: QueueRef, messageId: string) => {
    const entry = removeDeadLetter(queueOf(ref, context.now()), messageId);
    if (entry) attempts.delete(keys.deliveryAttempts(ref.namespace, ref.queue, messageId));
    return entry;
  };
  return {
    async recordDeliveryAttempt(ref, attempt) {
      const now = context.now();
      const counterKey = keys.deliveryAttempts(ref.namespace, ref.queue, attempt.messageId);
      const step = recordDeliveryAttempt(attempts.get(counterKey, now), queueOf(ref, now), attempt, now);
      if (step.queue) queues.set(queueKey(ref), step.queue.value, step.queue.expiresAt, now);
      if (step.counter) attempts.set(counterKey, step.counter.value, step.counter.expiresAt, now);
      return step.outcome;
    },

    async ackDelivery(ref, messageId) {
      const key = keys.deliveryAttempts(ref.namespace, ref.queue, messageId);
      const known = attempts.get(key, context.now()) !== undefined;
      attempts.delete(key);
      return known;
    },

    async listDeadLetters(ref, page) {
      const now = context.now();
      const queue = queueOf(ref, now);
      const { depth } = pruneDeadLetters(queue, page.retention, now);
      return { ...deadLetterPage(queue, page.limit, page.after), depth };
    },

    async redriveDeadLetter(ref, messageId) {
      return remove(ref, messageId);
    },

    async purgeDeadLetter(ref, messageId) {
      return remove(ref, messageId) !== null;
    },

    async countDeadLetters(ref, retention) {
      const now = context.now();
      return pruneDeadLetters(queueOf(ref, now), retention, now).depth;
    },

    async noteDeadLetterQueue(ref, terms) {
      const key = keys.namespace(ref.namespace).deadLetterQueues;
      let index = parkingQueues.get(key);
      if (!index) parkingQueues.set(key, (index = new Map()));
      noteDeadLetterQueue(index, ref.queue, context.now(), terms);
    },

    async listDeadLetterQueues(namespace, page) {
      const key = keys.namespace(namespace).deadLetterQueues;
      const listed = deadLetterQueuePage(parkingQueues.get(key), context.now(), page);
      if (parkingQueues.get(key)?.size === 0) parkingQueues.delete(key);
      return listed;
    },
  };
}
