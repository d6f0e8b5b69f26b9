// The console's pure helpers, run in Node: the event-stream parser, the diff, the duration field.
// The browser files are plain JavaScript without declarations: their shapes, as used here.
const CONSOLE = '../../apps/coordinator/src/console';
let createSseParser: (onEvent: (event: { event: string; data: string }) => void) => (chunk: string) => void;
let diffLines: (before: string, after: string) => Array<{ kind: string; line: string }>;
let parseDuration: (text: string) => number | null;

beforeAll(async () => {
  ({ createSseParser } = await import(`${CONSOLE}/events.js`));
  ({ diffLines } = await import(`${CONSOLE}/diff.js`));
  ({ parseDuration } = await import(`${CONSOLE}/format.js`));
});

describe('the console’s Server-Sent Events parser', () => {
  it('reassembles events split anywhere across chunks, skips comments, joins data lines', () => {
    const events: Array<{ event: string; data: string }> = [];
    const feed = createSseParser((event) => events.push(event));
    const stream =
      ': keep-alive\r\n\r\nevent: breaker\ndata: {"dep":"a",\ndata: "state":"open"}\n\ndata: plain\r\n\r\n';
    for (let i = 0; i < stream.length; i += 3) feed(stream.slice(i, i + 3));
    expect(events).toEqual([
      { event: 'breaker', data: '{"dep":"a",\n"state":"open"}' },
      { event: 'message', data: 'plain' },
    ]);
  });
});

it('takes a CRLF split between two chunks as one line end', () => {
  const events: Array<{ event: string; data: string }> = [];
  const feed = createSseParser((event) => events.push(event));
  feed('data: a\r');
  feed('\ndata: b\r\n\r\n');
  expect(events).toEqual([{ event: 'message', data: 'a\nb' }]);
});

describe('the console’s policy diff', () => {
  it('marks removed lines before added ones and keeps the common ones', () => {
    expect(diffLines('{\n  "a": 1,\n  "b": 2\n}', '{\n  "a": 1,\n  "b": 3\n}')).toEqual([
      { kind: 'same', line: '{' },
      { kind: 'same', line: '  "a": 1,' },
      { kind: 'removed', line: '  "b": 2' },
      { kind: 'added', line: '  "b": 3' },
      { kind: 'same', line: '}' },
    ]);
  });
});

describe('the console’s duration field', () => {
  it('reads seconds, minutes and hours; empty is none; anything else is NaN', () => {
    expect([parseDuration('90'), parseDuration('90s'), parseDuration('10m'), parseDuration(' 1h ')]).toEqual([
      90, 90, 600, 3600,
    ]);
    expect(parseDuration('')).toBeNull();
    expect(parseDuration('ten minutes')).toBeNaN();
  });
});
