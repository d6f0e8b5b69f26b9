import type {
  BreakerAction,
  BreakerRecord,
  BreakerSnapshot,
  DependencyReadPolicy,
  DependencySnapshot,
} from '@sluice/core';
import type { DependencyRef } from './common';

export type { BreakerAction, DependencyReadPolicy, DependencySnapshot, OutcomeTotals } from '@sluice/core';

/** A dependency as operators see and steer it: its state, and trips, force-closes and resets. */
export interface BreakerAdminStore {
  /** An operator's trip, force-close or reset. */
  setBreaker(ref: DependencyRef, action: BreakerAction): Promise<BreakerSnapshot>;

  /**
   * Keeps the dependency in `listDependencies` while the operator's forced state in `breaker` (as
   * `setBreaker` answered it) lasts: until it lapses, or for good until reset, however long
   * nobody uses the dependency. Any other state lets it go (the registry's retention then rules).
   */
  keepForcedListed(ref: DependencyRef, breaker: BreakerRecord): Promise<void>;

  /** The budget, the outcome totals and the breaker. */
  readDependency(ref: DependencyRef, policy: DependencyReadPolicy): Promise<DependencySnapshot>;
}
