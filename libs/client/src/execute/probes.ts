import { LOCAL_PROBE, type Probe } from '../decide/decider';
import type { FleetDependency } from '../fleet/fleet-dependency';
import type { SluiceRuntime } from '../runtime';

/** A probe's outcome: the local breaker's own, or reported to the fleet at once with its token. */
export function probeSettled(runtime: SluiceRuntime, fleet: FleetDependency, probe: Probe, success: boolean): void {
  if (probe === LOCAL_PROBE) fleet.local.probeOutcome(success, runtime.clock.now());
  else runtime.reportProbe(fleet, probe.token, success);
}

/** A probe that ends with no outcome once sent (abandoned): a local one is given back; a fleet one's lease expires. */
export function probeAbandoned(fleet: FleetDependency, probe: Probe | undefined): void {
  if (probe === LOCAL_PROBE) fleet.local.releaseProbe();
}

/**
 * A probe that was never sent: a local one is given back; a fleet one is kept for the next attempt
 * on the half-open breaker (the coordinator holds it for this client until it expires).
 */
export function probeUnsent(fleet: FleetDependency, probe: Probe | undefined): void {
  if (probe === LOCAL_PROBE) fleet.local.releaseProbe();
  else if (probe !== undefined) fleet.keptProbes.keep(probe);
}
