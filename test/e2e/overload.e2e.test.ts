import { sustainedDelayMs } from '../../apps/coordinator/src/http/event-loop-delay';
import { shedReason } from '../../apps/coordinator/src/http/load-shedding';
import { RedisServerProcess } from '../support/redis-server';
import { waitUntil } from '../support/time';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

const RETRY = { attempt: 1, idempotent: true, status: 503 };

describe('shedReason', () => {
  const limits = { maxEventLoopDelayMs: 200, maxInFlight: 10 };

  it('sheds past the event-loop delay or at the in-flight cap, and never when both are off', () => {
    expect(shedReason(199, 9, limits)).toBeUndefined();
    expect(shedReason(201, 0, limits)).toBe('event_loop_delay');
    expect(shedReason(0, 10, limits)).toBe('in_flight');
    expect(shedReason(10_000, 10_000, { maxEventLoopDelayMs: 0, maxInFlight: 0 })).toBeUndefined();
  });
});

describe('sustainedDelayMs', () => {
  it('is high only when every one of the last samples is: one stall is not an overload', () => {
    expect(sustainedDelayMs([1500, 4, 3])).toBe(3);
    expect(sustainedDelayMs([3, 4, 1500])).toBe(3);
    expect(sustainedDelayMs([1200, 1300, 1100])).toBe(1100);
    expect(sustainedDelayMs([9, 1200, 1300, 1100])).toBe(1100);
    expect(sustainedDelayMs([1500, 1500])).toBe(0); // not yet three samples
  });
});

describe('an instance past its in-flight cap', () => {
  const redis = new RedisServerProcess();
  let coordinator: TestCoordinator | undefined;

  const post = (path: string, body: object) =>
    fetch(`${coordinator!.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${coordinator!.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((candidate) => candidate.startsWith(`${name} `) || candidate.startsWith(`${name}{`));
    return Number(line?.split(' ').at(-1) ?? NaN);
  };

  beforeAll(async () => {
    await redis.start();
    coordinator = await testCoordinator({
      redis: redis.url,
      listen: true,
      config: { storeTimeoutMs: 10_000, maxInFlight: 2 },
    });
  });

  afterAll(async () => {
    redis.resume();
    await coordinator?.close();
    await redis.cleanup();
  });

  it('answers 503 overloaded with Retry-After before doing any work, and keeps health and metrics open', async () => {
    redis.pause();
    // Two asks wait on the stopped store: the instance is at its cap.
    const held = [post('/v1/shop/deps/pay/retry', RETRY), post('/v1/shop/deps/pay/retry', RETRY)];
    await waitUntil(
      async () => (await metric('sluice_http_requests_in_flight')) === 2,
      5_000,
      () => 'the two asks never got in flight',
    );

    const shed = await post('/v1/shop/deps/pay/retry', RETRY);
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toMatchObject({ statusCode: 503, code: 'overloaded' });
    expect((await fetch(`${coordinator!.url}/health/live`)).status).toBe(200);
    expect(await metric('sluice_overload_rejections_total')).toBe(1);

    redis.resume();
    const answers = await Promise.all(
      held.map(async (response) => (await (await response).json()) as { reason: string }),
    );
    expect(answers.map((answer) => answer.reason)).toEqual(['granted', 'granted']);
    // The shed ask counted nothing: the next one is the third retry of the window.
    const next = await (await post('/v1/shop/deps/pay/retry', RETRY)).json();
    expect(next).toMatchObject({ reason: 'granted', budget: { retries: 3 } });
    expect(await metric('sluice_http_requests_in_flight')).toBe(0);
  });
});
