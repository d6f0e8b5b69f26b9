import request from 'supertest';
import { parseExposition } from '../support/prometheus';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const REPORTERS = 40;

describe.each([
  ['embedded store', false],
  ['Redis', true],
])('reports merged per dependency on one instance (%s)', (_label, useRedis) => {
  let coordinator: TestCoordinator;
  let server: TestCoordinator['server'];
  const report = (reporter: string, entry: object) =>
    request(server)
      .post('/v1/shop/reports')
      .send({ reporter, deps: [entry] });
  /** How many record_outcomes store calls this instance has made. */
  const storeCalls = async () => {
    const { samples } = parseExposition((await request(server).get('/metrics').expect(200)).text);
    const count = samples.find(
      (sample) =>
        sample.name === 'sluice_store_operation_duration_seconds_count' && sample.labels.operation === 'recordOutcomes',
    );
    return count?.value ?? 0;
  };

  beforeAll(async () => {
    coordinator = await testCoordinator({ redis: useRedis, label: 'report-merging' });
    server = coordinator.server;
  });
  afterAll(() => coordinator?.close());

  it(`writes ${REPORTERS} simultaneous reports of one dependency in a few store calls, counting every reporter`, async () => {
    const before = await storeCalls();
    const answers = await Promise.all(
      Array.from({ length: REPORTERS }, (_, i) =>
        report(`pod-${i}`, { dep: 'popular', requests: 10, successes: 9, failures: 1, slow: 0 }).expect(200),
      ),
    );
    const calls = (await storeCalls()) - before;
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(REPORTERS / 4);
    // The fleet's size counts every reporter; the last merged call answers all of them.
    const counted = answers.map((answer) => answer.body.deps.popular.reporters as number);
    expect(Math.max(...counted)).toBe(REPORTERS);
    const { body } = await request(server).get('/v1/shop/deps/popular').expect(200);
    expect(body.budget.requests).toBe(REPORTERS * 10);
  });

  it('writes a report with probe outcomes at once, with what was gathered before it', async () => {
    // The first report after a quiet interval is written at once and starts an interval of 100 ms:
    // the two after it come within it.
    const before = await storeCalls();
    await report('pod-w', { dep: 'probed', requests: 1, successes: 1, failures: 0, slow: 0 }).expect(200);
    const plain = report('pod-x', { dep: 'probed', requests: 5, successes: 5, failures: 0, slow: 0 });
    const probe = report('pod-y', {
      dep: 'probed',
      requests: 1,
      successes: 1,
      failures: 0,
      slow: 0,
      probes: [{ token: 'no-such-probe', success: true }],
    });
    const [a, b] = await Promise.all([plain.expect(200), probe.expect(200)]);
    expect(a.body.deps.probed.reporters).toBe(3);
    expect(b.body.deps.probed.reporters).toBe(3);
    // The first report's call, and one for the two.
    expect((await storeCalls()) - before).toBe(2);
  });
});
