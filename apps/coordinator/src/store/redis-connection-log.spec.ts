import { RedisConnectionLog } from './redis-connection-log';

describe('RedisConnectionLog', () => {
  const refused = new Error('connect ECONNREFUSED 127.0.0.1:6399');

  function setup() {
    let now = 1_000_000;
    const lines: string[] = [];
    const log = new RedisConnectionLog(
      { warn: (message) => lines.push(`warn ${message}`), log: (message) => lines.push(`info ${message}`) },
      'redis://127.0.0.1:6399',
      () => now,
    );
    return { log, lines, advance: (ms: number) => (now += ms) };
  }

  it('says the first failure at once, then one line a minute, whatever the reconnect rate', () => {
    const { log, lines, advance } = setup();
    // Ten minutes of a reconnect attempt every 500 ms: 1,200 errors.
    for (let i = 0; i < 1200; i += 1) {
      log.failed(refused);
      advance(500);
    }
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe(
      'warn waiting for Redis at redis://127.0.0.1:6399 (connect ECONNREFUSED 127.0.0.1:6399): decisions answer ' +
        '503 store_unavailable and the SDKs use their local fallback until it answers; reconnecting',
    );
    expect(lines[1]).toBe(
      'warn still waiting for Redis at redis://127.0.0.1:6399 after 60 s (120 more failed attempts, the last: ' +
        'connect ECONNREFUSED 127.0.0.1:6399)',
    );
  });

  it('says once when Redis answers again, and a later outage is said at once', () => {
    const { log, lines, advance } = setup();
    log.ready(); // a first connect, no failure before it: nothing to say
    log.failed(refused);
    advance(3_000);
    log.failed(refused);
    log.ready();
    log.ready();
    expect(lines).toEqual([
      expect.stringMatching(/^warn waiting for Redis/),
      'info Redis at redis://127.0.0.1:6399 answers again after 3 s',
    ]);
    log.failed(refused);
    expect(lines[2]).toMatch(/^warn waiting for Redis/);
  });
});
