import type { DeadLetterRetention } from '@sluice/store';

/** Dead letters are kept 14 days, at most 10,000 per queue (the oldest go first). */
export const DEAD_LETTERS: DeadLetterRetention = { retentionMs: 14 * 86_400_000, maxLength: 10_000 };

/** A message's attempt count is forgotten 7 days after its last failure. */
export const ATTEMPT_RETENTION_MS = 7 * 86_400_000;

/** Largest payload kept with a dead letter, as JSON. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
