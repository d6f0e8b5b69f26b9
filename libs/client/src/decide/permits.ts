import type { FleetDependency } from '../fleet/fleet-dependency';
import type { LeaseKeeper } from '../fleet/leases';
import type { Permit } from './decider';

/** A slot of the local count taken by the fallback (no fleet lease). */
export const LOCAL_PERMIT: Permit = Object.freeze({ lease: undefined, slot: 'local' as const });

/**
 * Gives back what an attempt held: its local slot, and its lease (released, not waited for).
 * Once the slot is back (the release answered, for a lease), this process's first call waiting
 * for one asks again.
 */
export function releasePermit(leases: LeaseKeeper, fleet: FleetDependency, permit: Permit): void {
  if (permit.slot) fleet.localLimits.release(permit.slot === 'local');
  if (permit.lease) leases.release(permit.lease, () => fleet.slotReleased());
  else fleet.slotReleased();
}
