import { Redis } from 'ioredis';
import { isStoreUnavailableError } from '../src/errors';
import { withReplyDeadline } from '../src/redis/reply-deadline';
import { SHARED_REDIS_URL } from '../../../test/support/redis';

/** Keeps the event loop busy for `ms`, as a burst of requests or a GC pause does. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe('withReplyDeadline', () => {
  let client: Redis;

  beforeAll(async () => {
    client = new Redis(SHARED_REDIS_URL, { protocol: 2, enableAutoPipelining: true });
    await client.ping();
  });

  afterAll(() => client.disconnect());

  it('answers a reply that arrived while the event loop was stalled past the timeout', async () => {
    const replies = Array.from({ length: 50 }, (_, i) => withReplyDeadline(client.echo(`reply-${i}`), 20));
    // Redis answers within microseconds; the replies wait in the socket while the loop is busy.
    stallEventLoop(200);
    await expect(Promise.all(replies)).resolves.toEqual(Array.from({ length: 50 }, (_, i) => `reply-${i}`));
  });

  it('fails a call whose reply never comes, as store unavailable', async () => {
    const never = new Promise<never>(() => undefined);
    const error = await withReplyDeadline(never, 20).catch((caught: unknown) => caught);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe('Redis did not answer within 20 ms');
  });

  it('turns a failed command into store unavailable, keeping the cause', async () => {
    const failure = new Error('ERR unknown command');
    const error = await withReplyDeadline(Promise.reject(failure), 20).catch((caught: unknown) => caught);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).cause).toBe(failure);
  });

  it('never answers twice: a reply after the deadline is dropped', async () => {
    let deliver: (value: string) => void = () => undefined;
    const late = new Promise<string>((resolve) => (deliver = resolve));
    const outcome = withReplyDeadline(late, 10).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    deliver('too late');
    expect(await outcome).toEqual({ error: expect.objectContaining({ name: 'StoreUnavailableError' }) });
  });
});
