import type { BreakerAction, BreakerSnapshot, DependencyReadPolicy, DependencySnapshot } from '@sluice/core';
import type { DependencyRef } from './common';

export type { BreakerAction, DependencyReadPolicy, DependencySnapshot, OutcomeTotals } from '@sluice/core';

/** A dependency as operators see and steer it: its state, and trips, force-closes and resets. */
export interface BreakerAdminStore {
  /** An operator's trip, force-close or reset. */
  setBreaker(ref: DependencyRef, action: BreakerAction): Promise<BreakerSnapshot>;

  /** The budget, the outcome totals and the breaker. */
  readDependency(ref: DependencyRef, policy: DependencyReadPolicy): Promise<DependencySnapshot>;
}
