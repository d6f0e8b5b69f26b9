import { ConfigError, CoordinatorUnavailableError } from '../errors';
import { CoordinatorLink, FAILURES_BEFORE_FALLBACK, silentLogger, type ConfigErrorEvent } from './coordinator-link';

const answered503 = (code: string) =>
  new CoordinatorUnavailableError(`the coordinator answered 503 (${code})`, { status: 503, code, retryAfterMs: 1000 });

describe('CoordinatorLink', () => {
  it('switches to the fallback only after failures in a row, and a success starts the count again', () => {
    const link = new CoordinatorLink(silentLogger, 'local');
    const switches: boolean[] = [];
    link.changes.event(({ active }) => switches.push(active));
    expect(FAILURES_BEFORE_FALLBACK).toBe(3);
    expect(link.failed('retry', new Error('slow'))).toBe(false);
    expect(link.failed('report', new Error('slow'))).toBe(false);
    link.succeeded('retry');
    expect(link.failed('retry', new Error('slow'))).toBe(false);
    expect(link.failed('retry', new Error('slow'))).toBe(false);
    expect(link.fallback).toBe(false);
    expect(link.failed('admit', new Error('down'))).toBe(true);
    expect(link.fallback).toBe(true);
    expect(link.failed('report', new Error('down'))).toBe(true);
    link.succeeded('report');
    expect(link.fallback).toBe(false);
    expect(switches).toEqual([true, false]);
  });

  it('counts exchanges that were under way when one failed as one failure', () => {
    let now = 0;
    const link = new CoordinatorLink(silentLogger, 'local', 3, () => now);
    // A burst of decisions all started at 0 and all timed out at 50: one failure.
    now = 50;
    for (let i = 0; i < 20; i++) expect(link.failed('retry', new Error('slow'), 0)).toBe(false);
    // The next ones, started after it, count: the third independent failure switches.
    now = 110;
    expect(link.failed('retry', new Error('slow'), 60)).toBe(false);
    expect(link.failed('retry', new Error('slow'), 60)).toBe(false);
    now = 170;
    expect(link.failed('retry', new Error('slow'), 120)).toBe(true);
    expect(link.fallback).toBe(true);
  });

  it('does not count an overloaded answer: the instance shed the request, it is not down', () => {
    const link = new CoordinatorLink(silentLogger, 'local', 3);
    const switches: boolean[] = [];
    link.changes.event(({ active }) => switches.push(active));
    expect(link.failed('retry', answered503('store_unavailable'))).toBe(false);
    expect(link.failed('admit', answered503('store_unavailable'))).toBe(false);
    // However many come, shed requests neither switch nor reset the count.
    for (let i = 0; i < 50; i++) expect(link.failed('retry', answered503('overloaded'))).toBe(false);
    expect(link.fallback).toBe(false);
    expect(link.failed('report', answered503('store_unavailable'))).toBe(true);
    expect(switches).toEqual([true]);
  });

  it('a refused token is a configuration error: never the fallback, said once, logged at most every 30 s', () => {
    let now = 0;
    const lines: string[] = [];
    const logger = { ...silentLogger, error: (line: string) => lines.push(line) };
    const link = new CoordinatorLink(logger, 'local', 1, () => now);
    const said: ConfigErrorEvent[] = [];
    link.configErrors.event((event) => said.push(event));
    const switches: boolean[] = [];
    link.changes.event(({ active }) => switches.push(active));
    const refused = new ConfigError(401, 'unauthorized', 'unknown token');
    for (let i = 0; i < 100; i++) {
      now += 500;
      expect(link.failed('report', refused)).toBe(false);
    }
    expect(link.fallback).toBe(false);
    expect(link.configError).toBe(refused);
    expect(said).toEqual([{ error: refused, during: 'report' }]);
    // 50 s of refusals: a line at the first, and one 30 s later.
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^the coordinator answered 401 unauthorized: unknown token during report/);
    // Another refusal (a 403) is said again; a success ends it.
    link.failed('poll', new ConfigError(403, 'forbidden', 'the token may not touch namespace "shop"'));
    expect(said.map(({ error }) => error.status)).toEqual([401, 403]);
    link.succeeded('poll');
    expect(link.configError).toBeUndefined();
    // A refusal while the fallback decides ends the fallback: the coordinator is there.
    expect(link.failed('report', new Error('down'))).toBe(true);
    link.failed('report', refused);
    expect([link.fallback, switches]).toEqual([false, [true, false]]);
    expect(said).toHaveLength(3);
  });
});
