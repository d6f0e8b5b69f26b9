import type { FastifyBaseLogger } from 'fastify';
import { StoreFailureLog } from './store-failure-log';

interface Line {
  logger: string;
  msg: string;
}

/** Loggers that write into `lines`, named so a line says whose it was. */
function loggers(lines: Line[], bindings: object[] = []) {
  const named = (logger: string) =>
    ({
      warn: (lineBindings: object, msg: string) => {
        bindings.push(lineBindings);
        lines.push({ logger, msg });
      },
    }) as unknown as FastifyBaseLogger;
  return { server: named('server'), request: (id: string) => named(id) };
}

describe('StoreFailureLog', () => {
  const PERIOD_MS = 5000;
  let lines: Line[];
  let log: StoreFailureLog;
  let to: ReturnType<typeof loggers>;
  let bindings: object[];

  beforeEach(() => {
    jest.useFakeTimers();
    lines = [];
    bindings = [];
    to = loggers(lines, bindings);
    log = new StoreFailureLog(to.server, { context: 'HttpError' }, PERIOD_MS, () => Date.now());
  });

  afterEach(() => jest.useRealTimers());

  it("logs a period's first failure at once, to its request's logger, and sums up the rest in one line", () => {
    log.failed(to.request('r0'), 'store unavailable on POST /v1/shop/deps/a/retry: Connection is closed.');
    for (let i = 1; i <= 1000; i++) {
      jest.advanceTimersByTime(4);
      log.failed(to.request(`r${i}`), `store unavailable on POST /v1/shop/deps/a/retry: failure ${i}`);
    }
    expect(lines).toEqual([
      { logger: 'r0', msg: 'store unavailable on POST /v1/shop/deps/a/retry: Connection is closed.' },
    ]);

    jest.advanceTimersByTime(PERIOD_MS - 4000);
    expect(lines).toHaveLength(2);
    expect(bindings).toEqual([{ context: 'HttpError' }, { context: 'HttpError' }]);
    expect(lines[1]).toEqual({
      logger: 'server',
      msg:
        'store unavailable on 1000 more requests within 5 s, not logged one by one; ' +
        'the last: store unavailable on POST /v1/shop/deps/a/retry: failure 1000',
    });
  });

  it('goes on with one line a period while the failures go on, and logs at once again after a quiet period', () => {
    log.failed(to.request('first'), 'failure 0');
    for (let second = 1; second <= 12; second++) {
      jest.advanceTimersByTime(1000);
      log.failed(to.request(`r${second}`), `failure ${second}`);
    }
    // 13 failures over 12 s: the first line, then closing lines at 5 s (4 failures) and 10 s (5) so far.
    expect(lines.map((line) => line.msg)).toEqual([
      'failure 0',
      'store unavailable on 4 more requests within 5 s, not logged one by one; the last: failure 4',
      'store unavailable on 5 more requests within 5 s, not logged one by one; the last: failure 9',
    ]);
    jest.advanceTimersByTime(PERIOD_MS);
    expect(lines.at(-1)?.msg).toBe(
      'store unavailable on 3 more requests within 5 s, not logged one by one; the last: failure 12',
    );

    // A whole period without a failure: the next one is logged at once, with its request's id.
    jest.advanceTimersByTime(PERIOD_MS);
    log.failed(to.request('after'), 'failure after');
    expect(lines.at(-1)).toEqual({ logger: 'after', msg: 'failure after' });
    expect(lines).toHaveLength(5);
  });

  it('writes no closing line for a period with one failure', () => {
    log.failed(to.request('only'), 'failure');
    jest.advanceTimersByTime(3 * PERIOD_MS);
    expect(lines).toEqual([{ logger: 'only', msg: 'failure' }]);
  });

  it('says "request" for one', () => {
    log.failed(to.request('r0'), 'failure 0');
    log.failed(to.request('r1'), 'failure 1');
    jest.advanceTimersByTime(PERIOD_MS);
    expect(lines[1].msg).toBe(
      'store unavailable on 1 more request within 5 s, not logged one by one; the last: failure 1',
    );
  });
});
