import { DAY_MS } from '@sluice/protocol';
import type { DeadLetterQueueTerms, DeadLetterRetention } from '@sluice/store';

/**
 * Dead letters are kept 14 days, at most 10,000 and 64 MiB of payloads and errors per queue (the
 * oldest go first, counted in sluice_dead_letters_dropped_total).
 */
export const DEAD_LETTERS: DeadLetterRetention = {
  retentionMs: 14 * DAY_MS,
  maxLength: 10_000,
  maxBytes: 64 * 1024 * 1024,
};

/** A message's attempt count is forgotten 7 days after its last failure. */
export const ATTEMPT_RETENTION_MS = 7 * DAY_MS;

/**
 * The queues that parked dead letters are listed per namespace for as long as dead letters are
 * kept, at most 10,000 of them (the least recently parking go first).
 */
export const DEAD_LETTER_QUEUES: DeadLetterQueueTerms = {
  retentionMs: DEAD_LETTERS.retentionMs,
  maxQueues: 10_000,
};
