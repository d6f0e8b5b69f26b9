import pino from 'pino';
import { prettyDestination, prettyLine } from './pretty';

describe('prettyLine', () => {
  it('writes a JSON entry as one line: UTC time, level, context, message, then the other fields', () => {
    const entry = { level: 30, time: Date.UTC(2026, 2, 12, 14, 45, 1, 123), pid: 7, hostname: 'h', context: 'Sluice' };
    expect(prettyLine(JSON.stringify({ ...entry, msg: 'listening on http://127.0.0.1:8080' }))).toBe(
      '2026-03-12T14:45:01.123Z INFO  [Sluice] listening on http://127.0.0.1:8080\n',
    );
    expect(
      prettyLine(
        JSON.stringify({ ...entry, level: 40, msg: 'slow', reqId: 'r-1', res: { statusCode: 503 }, note: 'a b' }),
      ),
    ).toBe('2026-03-12T14:45:01.123Z WARN  [Sluice] slow reqId=r-1 res={"statusCode":503} note="a b"\n');
  });

  it('puts a stack on the lines below, indented', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 50,
        time: 0,
        msg: 'boom',
        err: { type: 'Error', stack: 'Error: boom\n    at f (x.ts:1)' },
      }),
    );
    expect(line).toBe('1970-01-01T00:00:00.000Z ERROR boom\n    Error: boom\n        at f (x.ts:1)\n');
  });

  it('keeps a line that is not JSON as it is', () => {
    expect(prettyLine('plain text')).toBe('plain text\n');
  });

  it('is a pino destination: every entry of a logger comes out as one readable line', () => {
    const written: string[] = [];
    const logger = pino({ level: 'info' }, prettyDestination({ write: (text) => written.push(text) }));
    logger.info({ context: 'Store' }, 'state in Redis');
    logger.debug('not at info');
    expect(written).toEqual([expect.stringMatching(/^\S+Z INFO  \[Store\] state in Redis\n$/)]);
  });
});
