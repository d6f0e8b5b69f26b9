import type { HistoryStep } from '@sluice/core';
import type { DependencyRef } from './common';

export type { HistoryStep } from '@sluice/core';

/**
 * A dependency's last 15 minutes at 10 s steps (libs/core dependency-history.ts), written by each
 * recordOutcomes: no call of its own on the decision path.
 */
export interface HistoryStore {
  /** The steps that had reports, oldest first; a dependency never reported has none. */
  readHistory(ref: DependencyRef): Promise<HistoryStep[]>;
}
