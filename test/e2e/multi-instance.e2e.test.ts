import { testCoordinator, type TestCoordinator, type TestInstance } from '../support/test-coordinator';

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the budget holds across instances', () => {
  let fleet: TestCoordinator;
  let a: TestInstance;
  let b: TestInstance;

  beforeAll(async () => {
    fleet = await testCoordinator({ redis: true, label: 'fleet', listen: true, instances: 2 });
    [a, b] = fleet.instances;
  });

  afterAll(() => fleet?.close());

  it('counts the fleet: every distinct reporter, through either instance, once', async () => {
    const report = async (url: string, reporter: string) => {
      const res = await post(`${url}/v1/shop/reports`, {
        reporter,
        deps: [{ dep: 'inventory', requests: 1, successes: 1, failures: 0, slow: 0 }],
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { deps: Record<string, { reporters: number }> }).deps.inventory.reporters;
    };
    expect(await report(a.url, 'pod-a')).toBe(1);
    expect(await report(b.url, 'pod-b')).toBe(2);
    expect(await report(b.url, 'pod-a')).toBe(2);
    const counts = await Promise.all(
      Array.from({ length: 20 }, (_, i) => report(i % 2 === 0 ? a.url : b.url, `pod-${i % 10}`)),
    );
    // pod-0 … pod-9 and pod-a, pod-b: each counted once, whichever instance it reached.
    expect(Math.max(...counts)).toBe(12);
    expect(await report(a.url, 'pod-b')).toBe(12);
  });

  it('grants exactly ratio × requests + floor of 300 concurrent retries split across two instances', async () => {
    // Deposits arrive through both instances too: 600 via A, 400 via B.
    for (const [instance, requests] of [
      [a, 600],
      [b, 400],
    ] as const) {
      const res = await post(`${instance.url}/v1/shop/reports`, {
        reporter: `pod-${requests}`,
        deps: [{ dep: 'payments-api', requests, successes: requests, failures: 0, slow: 0 }],
      });
      expect(res.status).toBe(200);
    }
    const expected = Math.floor(0.1 * 1000 + 10 * 10); // 200 with the default policy

    const answers = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const instance = i % 2 === 0 ? a : b;
        const res = await post(`${instance.url}/v1/shop/deps/payments-api/retry`, { attempt: 1, idempotent: true });
        expect(res.status).toBe(200);
        return { instance: instance === a ? 'a' : 'b', body: (await res.json()) as { allow: boolean; reason: string } };
      }),
    );

    const granted = answers.filter((answer) => answer.body.allow);
    const denied = answers.filter((answer) => !answer.body.allow);
    expect(granted).toHaveLength(expected);
    expect(denied).toHaveLength(300 - expected);
    expect(new Set(denied.map((answer) => answer.body.reason))).toEqual(new Set(['budget_exhausted']));
    // Both instances granted some: the budget is one fleet-wide fact, not two halves.
    expect(granted.some((answer) => answer.instance === 'a')).toBe(true);
    expect(granted.some((answer) => answer.instance === 'b')).toBe(true);

    const view = (await (await fetch(`${b.url}/v1/shop/deps/payments-api`)).json()) as { budget: unknown };
    expect(view.budget).toEqual({
      mode: 'adaptive',
      retries: expected,
      retriesSucceeded: 0,
      requests: 1000,
      limit: expected,
      cap: Math.floor(0.5 * 1000 + 10 * 10),
      windowSeconds: 10,
    });
  });
});
