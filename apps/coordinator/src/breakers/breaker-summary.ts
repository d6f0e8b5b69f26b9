import type { BreakerSummary } from '@sluice/protocol';
import type { BreakerRecord } from '@sluice/core';

/**
 * The breaker as a decision carries it: its state, and, when it is open or forced, until when and
 * the operator's reason (null for an automatic open), so a caller denied can say why.
 */
export function breakerSummaryOf(record: BreakerRecord): BreakerSummary {
  if (record.state === 'closed' || record.state === 'half_open') return { state: record.state };
  return { state: record.state, openUntil: record.openUntil, reason: record.reason };
}
