/**
 * Delivery attempts and dead letters, as pure functions over plain state: a message's attempt
 * counter and a queue's dead letters in parking order. The Lua twins are
 * record_delivery_attempt-3.lua, libs/store/src/redis/lua/includes/dead_letters.lua and the
 * scripts that use it; the store conformance suite keeps them equal.
 */

export interface AttemptCounter {
  attempts: number;
  firstAttemptAt: number;
  parked: boolean;
}

/** A dead letter as stored: the payload stays JSON text. */
export interface StoredDeadLetter {
  messageId: string;
  payload: string | null;
  error: string | null;
  attempts: number;
  deadLetteredAt: number;
  firstAttemptAt: number;
}

/** A queue's dead letters in parking order, as the Redis hash and sorted set keep them. */
export interface DeadLetterQueue {
  sequence: number;
  /** Message id → entry with its parking sequence; a Map keeps insertion order, a re-parked message moves to the end. */
  entries: Map<string, StoredDeadLetter & { seq: number }>;
}

export interface DeadLetterRetention {
  /** How long a dead letter is kept. */
  retentionMs: number;
  /** Most dead letters one queue keeps; the oldest go first. */
  maxLength: number;
}

export interface DeliveryAttemptInput {
  messageId: string;
  error: string | null;
  /** The message as JSON text, kept with the dead letter; null when not given. */
  payload: string | null;
  maxAttempts: number;
  /** How long a message's attempt count is kept after its last failure. */
  attemptRetentionMs: number;
  deadLetters: DeadLetterRetention;
  /**
   * The delivery this failure is for (a broker's delivery count, from 1), when the caller knows it:
   * the count becomes max(count, attempt), and an attempt at or below the count is a repeat that
   * changes nothing and answers the count as it stands. Absent: the count goes up by one.
   */
  attempt?: number;
}

export interface DeliveryAttemptOutcome {
  /** The attempt count after this call. */
  attempt: number;
  /** The message is parked (now, or already was). */
  deadLetter: boolean;
  /** True when this call parked it. */
  parkedNow: boolean;
  /** Dead letters in the queue after this call. */
  depth: number;
}

/** What to keep after an attempt: the counter and the queue, each until an instant; absent: unchanged. */
export interface DeliveryAttemptStep {
  outcome: DeliveryAttemptOutcome;
  counter?: { value: AttemptCounter; expiresAt: number };
  queue?: { value: DeadLetterQueue; expiresAt: number };
}

/** Counts one failed delivery; the failure of attempt `maxAttempts` parks the message in `queue`. */
export function recordDeliveryAttempt(
  stored: AttemptCounter | undefined,
  queue: DeadLetterQueue | undefined,
  input: DeliveryAttemptInput,
  now: number,
): DeliveryAttemptStep {
  const counter = stored ? { ...stored } : { attempts: 0, firstAttemptAt: now, parked: false };
  const depth = queue?.entries.size ?? 0;
  if (counter.parked) {
    const pruned = pruneDeadLetters(queue, input.deadLetters, now);
    return { outcome: { attempt: counter.attempts, deadLetter: true, parkedNow: false, depth: pruned } };
  }
  if (input.attempt !== undefined && input.attempt <= counter.attempts) {
    // A repeat of a delivery already counted: nothing changes.
    return { outcome: { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth } };
  }
  counter.attempts = input.attempt ?? counter.attempts + 1;
  if (counter.attempts < input.maxAttempts) {
    return {
      outcome: { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth },
      counter: { value: counter, expiresAt: now + input.attemptRetentionMs },
    };
  }
  const parking = queue ?? { sequence: 0, entries: new Map() };
  parking.sequence += 1;
  parking.entries.delete(input.messageId);
  parking.entries.set(input.messageId, {
    messageId: input.messageId,
    payload: input.payload,
    error: input.error || null,
    attempts: counter.attempts,
    deadLetteredAt: now,
    firstAttemptAt: counter.firstAttemptAt,
    seq: parking.sequence,
  });
  const expiresAt = now + input.deadLetters.retentionMs;
  const parkedDepth = pruneDeadLetters(parking, input.deadLetters, now);
  return {
    outcome: { attempt: counter.attempts, deadLetter: true, parkedNow: true, depth: parkedDepth },
    counter: { value: { ...counter, parked: true }, expiresAt },
    queue: { value: parking, expiresAt },
  };
}

/** Drops dead letters past their retention and the oldest past the maximum length; returns the depth. */
export function pruneDeadLetters(
  queue: DeadLetterQueue | undefined,
  retention: DeadLetterRetention,
  now: number,
): number {
  if (!queue) return 0;
  for (const [messageId, entry] of queue.entries) {
    if (entry.deadLetteredAt > now - retention.retentionMs && queue.entries.size <= retention.maxLength) break;
    queue.entries.delete(messageId);
  }
  return queue.entries.size;
}

/** A page of dead letters after the `after` cursor (a parking sequence), oldest first, and the next cursor. */
export function deadLetterPage(
  queue: DeadLetterQueue | undefined,
  limit: number,
  after?: string,
): { items: StoredDeadLetter[]; next: string | null } {
  const from = after === undefined ? -Infinity : Number(after);
  const rows = [...(queue?.entries.values() ?? [])].filter((entry) => entry.seq > from);
  const items = rows.slice(0, limit);
  const next = rows.length > limit ? String(items[items.length - 1].seq) : null;
  return { items: items.map(withoutSequence), next };
}

/** Takes one dead letter out of the queue; null when there is none. */
export function removeDeadLetter(queue: DeadLetterQueue | undefined, messageId: string): StoredDeadLetter | null {
  const entry = queue?.entries.get(messageId);
  if (!queue || !entry) return null;
  queue.entries.delete(messageId);
  return withoutSequence(entry);
}

function withoutSequence({ seq: _seq, ...entry }: StoredDeadLetter & { seq: number }): StoredDeadLetter {
  return entry;
}
