import type { OutcomeBatch, RecordedOutcomes } from '@sluice/core';
import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { MemoryStore, type Store } from '@sluice/store';
import { REPORT_MERGE_INTERVAL_MS, ReportMerger } from './report-merger';

const REF = { namespace: 'shop', dependency: 'payments-api' };
const POLICY = { budgetWindowSeconds: 10, breaker: DEFAULT_DEPENDENCY_POLICY.breaker };

const report = (reporter: string, requests: number, probes: OutcomeBatch['probes'] = []): OutcomeBatch => ({
  reporter,
  requests,
  successes: requests,
  failures: 0,
  slow: 0,
  retries: 0,
  probes,
});

/** A merger on the embedded store, with every record_outcomes call it makes. */
function setup() {
  const memory = new MemoryStore();
  const written: OutcomeBatch[] = [];
  const store = {
    recordOutcomes: (ref: typeof REF, batch: OutcomeBatch, policy: typeof POLICY) => {
      written.push(batch);
      return memory.recordOutcomes(ref, batch, policy);
    },
  } as unknown as Store;
  const merger = new ReportMerger(store);
  const answered: string[] = [];
  const record = (batch: OutcomeBatch): Promise<RecordedOutcomes> =>
    merger.record(REF, batch, POLICY).then((recorded) => {
      answered.push(batch.reporter);
      return recorded;
    });
  return { merger, written, answered, record };
}

describe('ReportMerger', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('writes the first report after a quiet interval at once, with the reports of the same turn', async () => {
    const { written, record } = setup();

    const answers = [record(report('pod-a', 3)), record(report('pod-b', 4))];
    await jest.advanceTimersByTimeAsync(0);

    expect(written.map((batch) => batch.requests)).toEqual([7]);
    expect((await Promise.all(answers)).map((recorded) => recorded.reporters)).toEqual([2, 2]);
  });

  it('makes at most one call per interval: the reports within it are answered at its end, written together', async () => {
    const { written, answered, record } = setup();
    const answers = [record(report('pod-0', 1))];
    await jest.advanceTimersByTimeAsync(0);
    for (let i = 1; i <= 9; i++) {
      await jest.advanceTimersByTimeAsync(10);
      answers.push(record(report(`pod-${i}`, 1)));
    }

    await jest.advanceTimersByTimeAsync(REPORT_MERGE_INTERVAL_MS - 91);
    expect(written).toHaveLength(1);
    expect(answered).toEqual(['pod-0']);

    await jest.advanceTimersByTimeAsync(1);
    expect(written.map((batch) => batch.requests)).toEqual([1, 9]);
    expect(written[1].reporters?.map((entry) => entry.reporter)).toEqual(
      Array.from({ length: 9 }, (_, i) => `pod-${i + 1}`),
    );
    expect((await Promise.all(answers)).at(-1)?.reporters).toBe(10);
  });

  it('writes a report with probe outcomes at once, with what was gathered before it', async () => {
    const { written, record } = setup();
    void record(report('pod-a', 1));
    await jest.advanceTimersByTimeAsync(0);

    await jest.advanceTimersByTimeAsync(10);
    const plain = record(report('pod-b', 2));
    const probe = record(report('pod-c', 1, [{ token: 'no-such-probe', success: true }]));
    await Promise.all([plain, probe]);

    expect(written.map((batch) => batch.requests)).toEqual([1, 3]);
    await jest.advanceTimersByTimeAsync(REPORT_MERGE_INTERVAL_MS);
    expect(written).toHaveLength(2);
  });

  it('after a quiet interval, writes the next report at once again', async () => {
    const { written, record } = setup();
    await Promise.all([record(report('pod-a', 1)), jest.advanceTimersByTimeAsync(0)]);
    await jest.advanceTimersByTimeAsync(2 * REPORT_MERGE_INTERVAL_MS);

    const next = record(report('pod-b', 1));
    await jest.advanceTimersByTimeAsync(0);

    expect(written).toHaveLength(2);
    expect((await next).reporters).toBe(2);
  });

  it('writes what is gathered when the module stops', async () => {
    const { merger, written, record } = setup();
    void record(report('pod-a', 1));
    await jest.advanceTimersByTimeAsync(0);
    const gathered = record(report('pod-b', 5));

    merger.onModuleDestroy();

    expect((await gathered).reporters).toBe(2);
    expect(written.map((batch) => batch.requests)).toEqual([1, 5]);
  });
});
