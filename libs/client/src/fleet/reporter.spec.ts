import { ManualClock } from '@sluice/core';
import type { ReportRequest, ReportResponse } from '@sluice/protocol';
import type { CoordinatorTransport } from '../transport/coordinator-transport';
import { CoordinatorLink, silentLogger } from './coordinator-link';
import { FleetDependency } from './fleet-dependency';
import { Reporter } from './reporter';

/** A reporter of one dependency every 200 ms over `transport`. */
const reporterOf = (dependency: FleetDependency, transport: CoordinatorTransport, clock: ManualClock) =>
  new Reporter(() => [dependency], transport, new CoordinatorLink(silentLogger, 'local'), clock, {
    reporter: 'pod-1',
    intervalMs: 200,
    timeoutMs: 1000,
    maxAgeMs: 10_000,
  });

describe('Reporter', () => {
  it('a flush made while a delivery is under way resolves only once what it found pending was delivered', async () => {
    const clock = new ManualClock();
    const dependency = new FleetDependency('inventory', undefined, 1);
    const received: ReportRequest[] = [];
    const held: Array<() => void> = [];
    const transport = {
      report: (request: ReportRequest) =>
        new Promise<ReportResponse>((resolve) => {
          received.push(request);
          held.push(() => resolve({ deps: {} }));
        }),
    } as unknown as CoordinatorTransport;
    const reporter = reporterOf(dependency, transport, clock);
    for (let i = 0; i < 3; i++) dependency.recordRequest(clock.now());
    const first = reporter.flush(); // the interval's delivery, under way
    for (let i = 0; i < 2; i++) dependency.recordRequest(clock.now());
    let closed = false;
    const last = reporter.flush().then(() => (closed = true)); // the flush on close
    held.shift()!();
    await first;
    // The first delivery is answered; the close's flush waits for the delivery of the 2 requests after it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    expect(received.map((request) => request.deps.map((dep) => dep.requests))).toEqual([[3], [2]]);
    held.shift()!();
    await last;
    expect(closed).toBe(true);
  });

  it('takes the breaker of a report’s answer whole: an operator’s trip learned from it carries the reason', async () => {
    const clock = new ManualClock();
    const dependency = new FleetDependency('inventory', undefined, 1);
    const reason = 'bad deploy 4711';
    const transport = {
      report: async (): Promise<ReportResponse> => ({
        deps: { inventory: { breaker: { state: 'forced_open', openUntil: null, reason }, reporters: 2 } },
      }),
    } as unknown as CoordinatorTransport;
    const reporter = reporterOf(dependency, transport, clock);
    dependency.recordRequest(clock.now());
    await reporter.flush();
    expect(dependency.breakerFacts(clock.now())).toMatchObject({ state: 'forced_open', operatorReason: reason });
    expect(dependency.fleetSize).toBe(2);
  });
});
