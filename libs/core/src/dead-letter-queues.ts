/**
 * The queues of a namespace that parked a dead letter, so operators can find them without knowing
 * a queue's name: queue → its latest parking (epoch ms), kept for the dead letters' retention and
 * capped, the least recently parked going first. A pure twin of note_dead_letter_queue-1.lua and
 * list_dead_letter_queues-1.lua over a Map.
 */

export interface DeadLetterQueueTerms {
  /** A queue that parked nothing for this long is forgotten (the dead letters' own retention). */
  retentionMs: number;
  /** Most queues listed per namespace; past it the least recently parked goes. */
  maxQueues: number;
}

/** One listed queue: its name and latest parking. */
export interface NotedDeadLetterQueue {
  queue: string;
  lastDeadLetteredAt: number;
}

export interface DeadLetterQueuePage {
  items: NotedDeadLetterQueue[];
  /** The last queue of this page when more follow (the next page starts after it); null on the last page. */
  next: string | null;
}

/** Forgets the queues that parked nothing within the retention (twin: ZREMRANGEBYSCORE -inf now-retention). */
function forgetStale(index: Map<string, number>, now: number, retentionMs: number): void {
  for (const [queue, at] of index) if (at <= now - retentionMs) index.delete(queue);
}

/** Notes that `queue` parked a dead letter now; past the cap the least recently parked go (ties: by name). */
export function noteDeadLetterQueue(
  index: Map<string, number>,
  queue: string,
  now: number,
  terms: DeadLetterQueueTerms,
): void {
  forgetStale(index, now, terms.retentionMs);
  index.set(queue, now);
  if (index.size <= terms.maxQueues) return;
  const order = [...index].sort(([a, atA], [b, atB]) => atA - atB || (a < b ? -1 : a > b ? 1 : 0));
  for (const [dropped] of order.slice(0, index.size - terms.maxQueues)) index.delete(dropped);
}

/** Up to `limit` queues by name, after `after` (a previous page's `next`). */
export function deadLetterQueuePage(
  index: Map<string, number> | undefined,
  now: number,
  page: { retentionMs: number; limit: number; after?: string },
): DeadLetterQueuePage {
  if (!index) return { items: [], next: null };
  forgetStale(index, now, page.retentionMs);
  const names = [...index.keys()].filter((queue) => page.after === undefined || queue > page.after).sort();
  const items = names.slice(0, page.limit).map((queue) => ({ queue, lastDeadLetteredAt: index.get(queue) ?? 0 }));
  return { items, next: names.length > page.limit ? (items.at(-1)?.queue ?? null) : null };
}
