/**
 * Delivery attempts and dead letters, as pure functions over plain state: a message's attempt
 * counter and a queue's dead letters in parking order. The Lua twins are
 * record_delivery_attempt-3.lua, libs/store/src/redis/lua/includes/dead_letters.lua and the
 * scripts that use it; the store conformance suite keeps them equal.
 */

export interface AttemptCounter {
  attempts: number;
  firstAttemptAt: number;
  /** Parked when its dead letter was made; it is parked while that dead letter is kept. */
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

/** A dead letter with its parking sequence and its size (bytes of payload and error). */
export type QueuedDeadLetter = StoredDeadLetter & { seq: number; bytes: number };

/** A queue's dead letters in parking order, as the Redis hash and sorted set keep them. */
export interface DeadLetterQueue {
  sequence: number;
  /** Message id → entry; a Map keeps insertion order, a re-parked message moves to the end. */
  entries: Map<string, QueuedDeadLetter>;
  /** The sum of the entries' bytes. */
  bytes: number;
}

export interface DeadLetterRetention {
  /** How long a dead letter is kept. */
  retentionMs: number;
  /** Most dead letters one queue keeps; the oldest go first. */
  maxLength: number;
  /** Most bytes of payload and error one queue keeps; the oldest go first. Absent: no byte cap. */
  maxBytes?: number;
}

/**
 * Most dead letters one call drops, so every call's work stays bounded: `expired` past their
 * retention, `overCap` past maxLength or maxBytes (the Lua twin, dead_letters.lua, uses the same).
 */
export const DEAD_LETTER_PRUNE_BATCH = { expired: 100, overCap: 1000 } as const;

const utf8 = new TextEncoder();

/** What a dead letter weighs against its queue's byte cap: the UTF-8 bytes of its payload and error. */
export function deadLetterBytes(payload: string | null, error: string | null): number {
  return utf8.encode(payload ?? '').length + utf8.encode(error ?? '').length;
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
  /** Dead letters this call dropped, oldest first, to keep the queue within its caps. */
  dropped: number;
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
  const fresh = { attempts: 0, firstAttemptAt: now, parked: false };
  let counter = stored ? { ...stored } : fresh;
  const depth = queue?.entries.size ?? 0;
  if (counter.parked) {
    const pruned = pruneDeadLetters(queue, input.deadLetters, now);
    if (queue?.entries.has(input.messageId)) {
      return {
        outcome: { attempt: counter.attempts, deadLetter: true, parkedNow: false, depth: pruned.depth, dropped: 0 },
      };
    }
    // Its dead letter was dropped (a cap, its retention): the message is forgotten with it.
    counter = fresh;
  }
  if (input.attempt !== undefined && input.attempt <= counter.attempts) {
    // A repeat of a delivery already counted: nothing changes.
    return { outcome: { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth, dropped: 0 } };
  }
  counter.attempts = input.attempt ?? counter.attempts + 1;
  if (counter.attempts < input.maxAttempts) {
    return {
      outcome: { attempt: counter.attempts, deadLetter: false, parkedNow: false, depth, dropped: 0 },
      counter: { value: counter, expiresAt: now + input.attemptRetentionMs },
    };
  }
  const parking = queue ?? { sequence: 0, entries: new Map(), bytes: 0 };
  parking.sequence += 1;
  removeDeadLetter(parking, input.messageId);
  const bytes = deadLetterBytes(input.payload, input.error || null);
  parking.entries.set(input.messageId, {
    messageId: input.messageId,
    payload: input.payload,
    error: input.error || null,
    attempts: counter.attempts,
    deadLetteredAt: now,
    firstAttemptAt: counter.firstAttemptAt,
    seq: parking.sequence,
    bytes,
  });
  parking.bytes += bytes;
  const expiresAt = now + input.deadLetters.retentionMs;
  const pruned = pruneDeadLetters(parking, input.deadLetters, now);
  // Past the caps the newest goes too: then it is not parked, and says so.
  const parked = parking.entries.has(input.messageId);
  return {
    outcome: { attempt: counter.attempts, deadLetter: parked, parkedNow: parked, ...pruned },
    counter: parked
      ? { value: { ...counter, parked: true }, expiresAt }
      : { value: counter, expiresAt: now + input.attemptRetentionMs },
    queue: { value: parking, expiresAt },
  };
}

/**
 * Drops, oldest first, dead letters past their retention, then those past maxLength or maxBytes,
 * at most DEAD_LETTER_PRUNE_BATCH of each per call; the depth left and how many the caps dropped.
 */
export function pruneDeadLetters(
  queue: DeadLetterQueue | undefined,
  retention: DeadLetterRetention,
  now: number,
): { depth: number; dropped: number } {
  if (!queue) return { depth: 0, dropped: 0 };
  let expired = 0;
  for (const entry of queue.entries.values()) {
    if (expired >= DEAD_LETTER_PRUNE_BATCH.expired || entry.deadLetteredAt > now - retention.retentionMs) break;
    removeDeadLetter(queue, entry.messageId);
    expired += 1;
  }
  const overCap = () =>
    queue.entries.size > retention.maxLength || (retention.maxBytes !== undefined && queue.bytes > retention.maxBytes);
  let dropped = 0;
  for (const entry of queue.entries.values()) {
    if (dropped >= DEAD_LETTER_PRUNE_BATCH.overCap || !overCap()) break;
    removeDeadLetter(queue, entry.messageId);
    dropped += 1;
  }
  return { depth: queue.entries.size, dropped };
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
  queue.bytes -= entry.bytes;
  return withoutSequence(entry);
}

function withoutSequence({ seq: _seq, bytes: _bytes, ...entry }: QueuedDeadLetter): StoredDeadLetter {
  return entry;
}
