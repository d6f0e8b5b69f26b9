import { Sluice } from '../sluice';
import { contextFromHeaders, runWithContext, runWithDeadline } from './request-context';

/** Blocks the event loop for `ms`: the process clock's timer cannot tick, its reading goes stale. */
function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

describe('the deadline an attempt forwards, on the default clocks', () => {
  // No coordinator answers: the first attempt through the closed breaker needs none.
  const sluice = new Sluice({ baseUrls: ['http://127.0.0.1:9'], namespace: 'shop', logger: false, sse: false });
  const pay = sluice.dependency('pay');
  const forwarded = (attempt: { headers: Record<string, string> }) => Number(attempt.headers['sluice-deadline-ms']);

  beforeAll(async () => {
    await pay.execute(() => 'the first view is read (or failed) before the calls below');
  });
  afterAll(() => sluice.close());

  it('is never more than the request was given, though a blocked event loop left the clock reading stale', async () => {
    // A call takes a reading; the event loop is then blocked, and the request's header is read after.
    const earlier = pay.execute(() => 'takes a reading');
    blockFor(5);
    const sent = await runWithContext(contextFromHeaders({ 'sluice-deadline-ms': '2000' }), () =>
      pay.execute(forwarded),
    );
    await earlier;
    expect(sent).toBeLessThanOrEqual(2000);
    expect(sent).toBeGreaterThan(1900);
  });

  it('is never more than runWithDeadline gave', async () => {
    const earlier = pay.execute(() => 'takes a reading');
    blockFor(5);
    const sent = await runWithDeadline(1000, () => pay.execute(forwarded));
    await earlier;
    expect(sent).toBeLessThanOrEqual(1000);
  });
});
