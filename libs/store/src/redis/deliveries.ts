import type { SluiceKeys } from '../keys';
import type { DeliveryStore, QueueRef, StoredDeadLetter } from '../roles/deliveries';
import type { ScriptRunner } from './script-runner';

/** An entry as the Lua scripts encode it (cjson). */
function parseDeadLetter(json: string): StoredDeadLetter {
  const entry = JSON.parse(json) as StoredDeadLetter;
  return {
    messageId: entry.messageId,
    payload: entry.payload ?? null,
    error: entry.error ?? null,
    attempts: entry.attempts,
    deadLetteredAt: entry.deadLetteredAt,
    firstAttemptAt: entry.firstAttemptAt,
  };
}

/** Delivery attempts and dead letters, under the queue's hash tag: the *_dead_letter(s) and *_delivery* scripts. */
export function redisDeliveries(scripts: ScriptRunner, keys: SluiceKeys): DeliveryStore {
  /** The dead letters' hash and index, and one message's attempts hash. */
  const deadLetterKeys = (ref: QueueRef, messageId: string): [string, string, string] => {
    const queue = keys.queue(ref.namespace, ref.queue);
    return [queue.deadLetters, queue.deadLetterIndex, keys.deliveryAttempts(ref.namespace, ref.queue, messageId)];
  };
  return {
    async recordDeliveryAttempt(ref, attempt) {
      const queue = keys.queue(ref.namespace, ref.queue);
      const [count, deadLetter, parkedNow, depth, dropped] = await scripts.run(
        'record_delivery_attempt',
        keys.deliveryAttempts(ref.namespace, ref.queue, attempt.messageId),
        queue.deadLetters,
        queue.deadLetterIndex,
        attempt.messageId,
        attempt.maxAttempts,
        attempt.error ?? '',
        attempt.payload ?? '',
        attempt.attemptRetentionMs,
        attempt.deadLetters.retentionMs,
        attempt.deadLetters.maxLength,
        attempt.attempt ?? 0,
        attempt.deadLetters.maxBytes ?? -1,
      );
      return { attempt: count, deadLetter: deadLetter === 1, parkedNow: parkedNow === 1, depth, dropped };
    },

    async ackDelivery(ref, messageId) {
      return (await scripts.run('ack_delivery', keys.deliveryAttempts(ref.namespace, ref.queue, messageId))) === 1;
    },

    async listDeadLetters(ref, page) {
      const queue = keys.queue(ref.namespace, ref.queue);
      const [depth, next, ...entries] = await scripts.run(
        'list_dead_letters',
        queue.deadLetters,
        queue.deadLetterIndex,
        page.limit,
        page.after ?? '',
        page.retention.retentionMs,
        page.retention.maxLength,
        page.retention.maxBytes ?? -1,
      );
      return { items: entries.map(parseDeadLetter), next: next === '' ? null : next, depth };
    },

    async redriveDeadLetter(ref, messageId) {
      const entry = await scripts.run('redrive_dead_letter', ...deadLetterKeys(ref, messageId), messageId);
      return entry === null ? null : parseDeadLetter(entry);
    },

    async purgeDeadLetter(ref, messageId) {
      return (await scripts.run('purge_dead_letter', ...deadLetterKeys(ref, messageId), messageId)) === 1;
    },

    async countDeadLetters(ref, retention) {
      const queue = keys.queue(ref.namespace, ref.queue);
      return scripts.run(
        'count_dead_letters',
        queue.deadLetters,
        queue.deadLetterIndex,
        retention.retentionMs,
        retention.maxLength,
        retention.maxBytes ?? -1,
      );
    },

    async noteDeadLetterQueue(ref, terms) {
      await scripts.run(
        'note_dead_letter_queue',
        keys.namespace(ref.namespace).deadLetterQueues,
        ref.queue,
        terms.retentionMs,
        terms.maxQueues,
      );
    },

    async listDeadLetterQueues(namespace, page) {
      const [next, ...listed] = await scripts.run(
        'list_dead_letter_queues',
        keys.namespace(namespace).deadLetterQueues,
        page.retentionMs,
        page.after ?? '',
        page.limit,
      );
      const items = [];
      for (let i = 0; i + 1 < listed.length; i += 2) {
        items.push({ queue: String(listed[i]), lastDeadLetteredAt: Number(listed[i + 1]) });
      }
      return { items, next: next === '' ? null : String(next) };
    },
  };
}
