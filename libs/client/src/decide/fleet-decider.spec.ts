import { ManualClock } from '@sluice/core';
import type { RetryAsk, RetryDecision, RetryRequest } from '@sluice/protocol';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinatorLink, silentLogger } from '../fleet/coordinator-link';
import { FleetDependency } from '../fleet/fleet-dependency';
import { LeaseKeeper } from '../fleet/leases';
import { TimeoutWatch } from '../timeout-watch';
import { FleetDecider } from './fleet-decider';
import { grantedDecision } from '../../../../test/support/decisions';

const GRANT = grantedDecision({ budget: { retries: 1, requests: 10, limit: 5, windowSeconds: 10 } });

/**
 * A coalescing decider whose coordinator answers the first ask only when told to, on a manual
 * clock: what the caller's wait leaves once that answer comes is up to the test.
 */
function setup() {
  const asked: RetryRequest[] = [];
  let answerFirst: () => void = () => undefined;
  const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
  const decide = async (request: RetryRequest): Promise<RetryDecision> => {
    asked.push(request);
    if (asked.length === 1) await firstAnswered;
    return GRANT;
  };
  const transport = {
    retry: (_dep: string, request: RetryRequest) => decide(request),
    retries: async (asks: RetryAsk[]) => ({ decisions: await Promise.all(asks.map((ask) => decide(ask))) }),
    admit: async () => {
      throw new Error('not used');
    },
  };
  const link = new CoordinatorLink(silentLogger, 'local', 1);
  const leases = new LeaseKeeper(
    { releaseLease: async () => undefined, renewLease: async () => ({ expiresAt: 0 }) },
    link,
    new TimeoutWatch(),
    1000,
  );
  const clock = new ManualClock();
  const decider = new FleetDecider(transport, link, leases, clock, { decisionTimeoutMs: 200, requestTimeoutMs: 1000 });
  return { decider, clock, asked, answerFirst, link, dependency: new FleetDependency('pay', undefined, 1) };
}

async function untilAsked(asked: unknown[], count: number): Promise<void> {
  while (asked.length < count) await sleep(1);
}

describe('FleetDecider: retry asks made while another is under way', () => {
  it('does not send an ask its caller would wait for less than a quarter of the decision time', async () => {
    const { decider, clock, asked, answerFirst, link, dependency } = setup();
    const first = decider.retry(dependency, { attempt: 1, status: 503 });
    await untilAsked(asked, 1);
    // The second waits for the first (its denial might hold); the process is then busy for 160 of
    // the 200 ms: 40 ms would be left, less than a quarter.
    const second = decider.retry(dependency, { attempt: 1, status: 503 });
    clock.advance(160);
    answerFirst();

    expect((await first)?.reason).toBe('granted');
    expect(await second).toEqual({ allow: false, reason: 'coordinator_unavailable', delayMs: 0 });
    expect(asked).toHaveLength(1);
    expect(link.fallback).toBe(false);
  });

  it('sends it when enough of the decision time is left', async () => {
    const { decider, clock, asked, answerFirst, dependency } = setup();
    const first = decider.retry(dependency, { attempt: 1, status: 503 });
    await untilAsked(asked, 1);
    const second = decider.retry(dependency, { attempt: 1, status: 503 });
    clock.advance(100);
    answerFirst();

    expect((await first)?.reason).toBe('granted');
    expect((await second)?.reason).toBe('granted');
    expect(asked).toHaveLength(2);
  });
});
