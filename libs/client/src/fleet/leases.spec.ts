import { CoordinatorUnavailableError } from '../errors';
import { TimeoutWatch } from '../timeout-watch';
import { CoordinatorLink, silentLogger } from './coordinator-link';
import { LeaseKeeper, type LeaseTransport } from './leases';

/** A keeper over a scripted transport: calls are recorded, answers come from `answer`. */
function setup(answer: (call: string) => Promise<unknown> = async () => ({ expiresAt: 0 })) {
  const calls: string[] = [];
  const transport: LeaseTransport = {
    releaseLease: async (dep, id, timeoutMs) => {
      calls.push(`DELETE ${dep}/${id} ${timeoutMs}`);
      await answer('release');
    },
    renewLease: async (dep, id, timeoutMs) => {
      calls.push(`RENEW ${dep}/${id} ${timeoutMs}`);
      return (await answer('renew')) as { expiresAt: number };
    },
  };
  const link = new CoordinatorLink(silentLogger, 'local', 1);
  const keeper = new LeaseKeeper(transport, link, new TimeoutWatch(), 1000);
  return { calls, link, keeper };
}

describe('LeaseKeeper', () => {
  // Renewals are due on the attempts' shared timer (real time, Date.now()): a fake clock drives both.
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('releases a lease once, without waiting for the answer', async () => {
    let answer: () => void = () => undefined;
    let answered = false;
    const { calls, keeper } = setup(
      () =>
        new Promise<void>((resolve) => {
          answer = () => {
            answered = true;
            resolve();
          };
        }),
    );
    const hold = keeper.hold('pay', 'lease-1', 2000, Date.now());
    keeper.release(hold);
    keeper.release(hold);
    expect(calls).toEqual(['DELETE pay/lease-1 1000']);
    expect(answered).toBe(false);
    const settled = keeper.settled();
    answer();
    await settled;
    expect(answered).toBe(true);
  });

  it('renews half a lease after it was asked for, and again after each renewal, until released', async () => {
    const { calls, keeper } = setup();
    const renewals = () => calls.filter((call) => call === 'RENEW pay/lease-2 20');
    const hold = keeper.hold('pay', 'lease-2', 40, Date.now());
    await jest.advanceTimersByTimeAsync(19);
    expect(renewals()).toHaveLength(0);
    // Due at 20 ms, then half a lease after each renewal was sent: 40 ms, 60 ms; each bounded by half the lease.
    await jest.advanceTimersByTimeAsync(1);
    expect(renewals()).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(19);
    expect(renewals()).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(renewals()).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(20);
    expect(renewals()).toHaveLength(3);
    await jest.advanceTimersByTimeAsync(10);
    keeper.release(hold);
    await keeper.settled();
    expect(hold.renewals).toBe(3);
    expect(calls).toEqual([...renewals(), 'DELETE pay/lease-2 1000']);
    // Released: no renewal is due any more.
    await jest.advanceTimersByTimeAsync(1000);
    expect(calls.filter((call) => call.startsWith('RENEW'))).toHaveLength(3);
  });

  it('a 404 (the lease already expired) is no outage; any other failure starts the fallback', async () => {
    const expired = setup(async () => {
      throw new CoordinatorUnavailableError('no such lease', { status: 404 });
    });
    expired.keeper.release(expired.keeper.hold('pay', 'gone', 2000, Date.now()));
    await expired.keeper.settled();
    expect(expired.link.fallback).toBe(false);

    const down = setup(async () => {
      throw new CoordinatorUnavailableError('the coordinator is unreachable: ECONNREFUSED');
    });
    const hold = down.keeper.hold('pay', 'lost', 20, Date.now());
    await jest.advanceTimersByTimeAsync(10); // the renewal is due half a lease after it was asked for
    await down.keeper.settled();
    expect(down.link.fallback).toBe(true);
    // A failed renewal is not tried again: the lease runs out on its own.
    await jest.advanceTimersByTimeAsync(1000);
    expect(down.calls).toEqual(['RENEW pay/lost 10']);
    down.keeper.release(hold);
    await down.keeper.settled();
  });
});
