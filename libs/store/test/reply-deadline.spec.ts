import { Redis } from 'ioredis';
import { isStoreUnavailableError } from '../src/errors';
import { ReplyDeadline } from '../src/redis/reply-deadline';
import { RedisServerProcess } from '../../../test/support/redis-server';

/** Keeps the event loop busy for `ms`, as a burst of requests or a GC pause does. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** A reply that arrives after `ms` (on a timer: the order of timers is the order of arrival). */
const replyAfter = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
const never = () => new Promise<never>(() => undefined);

describe('ReplyDeadline', () => {
  // A server of its own: no other test's traffic shares its timing.
  const server = new RedisServerProcess();
  let client: Redis;

  beforeAll(async () => {
    await server.start();
    client = new Redis(server.url, { protocol: 2, enableAutoPipelining: true });
    await client.ping();
  });

  afterAll(async () => {
    client.disconnect();
    await server.cleanup();
  });

  it('answers replies that arrived while the event loop was stalled past the timeout', async () => {
    const deadline = new ReplyDeadline(20);
    const replies = Array.from({ length: 50 }, (_, i) => deadline.guard(client.echo(`reply-${i}`)));
    // Redis answers within microseconds; the replies wait in the socket while the loop is busy.
    stallEventLoop(200);
    await expect(Promise.all(replies)).resolves.toEqual(Array.from({ length: 50 }, (_, i) => `reply-${i}`));
  });

  it('starts the clock when a call is written, not when a long turn of the event loop issued it', async () => {
    const deadline = new ReplyDeadline(30);
    // Each script keeps Redis busy for 50 µs: 100 of them take it about 5 ms to answer.
    const busy =
      "local t = redis.call('TIME'); local start = t[1] * 1e6 + t[2]; " +
      "repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - start >= 50; return 1";
    const replies = Array.from({ length: 100 }, () => deadline.guard(client.eval(busy, 0)));
    // The rest of this turn (other requests being parsed) outlasts the timeout before the
    // pipeline is flushed at the end of it.
    stallEventLoop(100);
    const outcomes = await Promise.allSettled(replies);
    expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
  });

  it('waits for a connection that keeps answering: a backlog longer than the timeout is not an outage', async () => {
    const deadline = new ReplyDeadline(40);
    // Replies 30 ms apart on one connection: the last comes 90 ms after it was asked for.
    const replies = [30, 60, 90].map((ms) => deadline.guard(replyAfter(ms, ms), 'node-a'));
    await expect(Promise.all(replies)).resolves.toEqual([30, 60, 90]);
  });

  it('fails the calls of a connection that went silent, though another connection answers', async () => {
    const deadline = new ReplyDeadline(20);
    const silent = deadline.guard(never(), 'node-a');
    const chatty = setInterval(() => void deadline.guard(client.ping(), 'node-b'), 5);
    const error = await silent.catch((caught: unknown) => caught);
    clearInterval(chatty);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe('Redis did not answer within 20 ms');
  });

  it('asks a probe before failing a silent connection: a Redis busy with others is not an outage', async () => {
    let probes = 0;
    const deadline = new ReplyDeadline(20, 1000, () => {
      probes += 1;
      return client.ping();
    });
    // The connection stays silent for 120 ms (Redis working through other clients' pipelines).
    await expect(deadline.guard(replyAfter(120, 'late'))).resolves.toBe('late');
    expect(probes).toBeGreaterThan(0);
  });

  it('fails a silent connection whose probe gets no answer either', async () => {
    const deadline = new ReplyDeadline(20, 1000, () => never());
    const error = await deadline.guard(never()).catch((caught: unknown) => caught);
    expect(isStoreUnavailableError(error)).toBe(true);
  });

  it('fails a call that waits longer than its longest wait, though its connection keeps answering', async () => {
    const deadline = new ReplyDeadline(20, 60);
    const chatty = setInterval(() => void deadline.guard(replyAfter(1, 'ok')), 5);
    const error = await deadline.guard(never()).catch((caught: unknown) => caught);
    clearInterval(chatty);
    expect(isStoreUnavailableError(error)).toBe(true);
  });

  it('turns a failed command into store unavailable, keeping the cause', async () => {
    const failure = new Error('Connection is closed.');
    const error = await new ReplyDeadline(20).guard(Promise.reject(failure)).catch((caught: unknown) => caught);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).cause).toBe(failure);
  });

  it('never answers twice: a reply after the deadline is dropped', async () => {
    let deliver: (value: string) => void = () => undefined;
    const late = new Promise<string>((resolve) => (deliver = resolve));
    const answers: unknown[] = [];
    const outcome = new ReplyDeadline(10).guard(late).then(
      (value: string) => answers.push({ value }),
      (error: unknown) => answers.push({ error }),
    );
    // The reply comes only once the deadline has answered (a fixed wait would race the deadline's
    // own timer on a loaded machine, where a reply already there is read first, by design).
    await outcome;
    deliver('too late');
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toEqual([{ error: expect.objectContaining({ name: 'StoreUnavailableError' }) }]);
  });
});
