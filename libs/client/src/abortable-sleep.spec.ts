import { sleep } from './abortable-sleep';

describe('sleep', () => {
  afterEach(() => jest.restoreAllMocks());

  it('waits its whole time though a timer fires early', async () => {
    const realSetTimeout = global.setTimeout;
    // Every timer fires at half its time, as one whose millisecond clock is behind fires early.
    jest
      .spyOn(global, 'setTimeout')
      .mockImplementation(((callback: () => void, ms: number) => realSetTimeout(callback, ms / 2)) as never);
    const from = performance.now();
    await sleep(40);
    expect(performance.now() - from).toBeGreaterThanOrEqual(40);
  });

  it("rejects with the signal's reason when it aborts, and at once when it already has", async () => {
    const controller = new AbortController();
    const waiting = sleep(10_000, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    await expect(sleep(10, controller.signal)).rejects.toThrow('cancelled');
  });

  it('ends at once for no time and no signal', async () => {
    const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
    await sleep(0);
    expect(setTimeoutSpy).not.toHaveBeenCalled();
  });
});
