import { DEAD_LETTER_PRUNE_BATCH } from '@sluice/core';
import type { DeadLetterRetention, DeliveryAttemptRecord, QueueRef, Store } from '../src';
import type { StoreUnderTest } from './store-conformance';

let sequence = 0;
const freshQueue = (): QueueRef => ({ namespace: 'bounds', queue: `queue-${++sequence}` });
const LONG: DeadLetterRetention = { retentionMs: 600_000, maxLength: 10_000 };
const parkOf = (messageId: string, fields: Partial<DeliveryAttemptRecord> = {}): DeliveryAttemptRecord => ({
  messageId,
  error: 'boom',
  payload: '{"order":42}',
  maxAttempts: 1,
  attemptRetentionMs: 600_000,
  deadLetters: LONG,
  ...fields,
});

/**
 * A queue's dead letters within their caps, in every Store alike: what the caps drop is counted
 * and takes its message's parking with it, and pruning does a bounded amount of work per call.
 */
export function describeDeadLetterBoundsConformance(label: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Dead-letter bounds: ${label}`, () => {
    let subject: StoreUnderTest;
    let store: Store;
    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(() => subject.cleanup());

    const listed = async (ref: QueueRef, retention = LONG) =>
      (await store.listDeadLetters(ref, { limit: 100, retention })).items.map((item) => item.messageId);

    it('counts a dead letter the length cap drops, and forgets its message with it', async () => {
      const ref = freshQueue();
      const two = { ...LONG, maxLength: 2 };
      for (const id of ['a', 'b'])
        expect(await store.recordDeliveryAttempt(ref, parkOf(id, { deadLetters: two }))).toMatchObject({
          parkedNow: true,
          dropped: 0,
        });
      expect(await store.recordDeliveryAttempt(ref, parkOf('c', { deadLetters: two }))).toMatchObject({
        deadLetter: true,
        parkedNow: true,
        depth: 2,
        dropped: 1,
      });
      expect(await listed(ref, two)).toEqual(['b', 'c']);
      // 'a' is neither listed nor parked: it is not redrivable or purgeable, and comes back counted anew.
      expect(await store.redriveDeadLetter(ref, 'a')).toBeNull();
      expect(await store.purgeDeadLetter(ref, 'a')).toBe(false);
      const again = await store.recordDeliveryAttempt(ref, parkOf('a', { maxAttempts: 2, deadLetters: two }));
      expect(again).toMatchObject({ attempt: 1, deadLetter: false, parkedNow: false });
      const parked = await store.recordDeliveryAttempt(ref, parkOf('a', { maxAttempts: 2, deadLetters: two }));
      expect(parked).toMatchObject({ attempt: 2, deadLetter: true, parkedNow: true, dropped: 1 });
      expect(await listed(ref, two)).toEqual(['c', 'a']);
      // A parked message still answers parked while its dead letter is kept.
      expect(await store.recordDeliveryAttempt(ref, parkOf('c', { deadLetters: two }))).toMatchObject({
        deadLetter: true,
        parkedNow: false,
        dropped: 0,
      });
    });

    it('keeps a queue within its byte cap (payload and error), the oldest going first', async () => {
      const ref = freshQueue();
      const payload = JSON.stringify({ text: 'é'.repeat(20) }); // 51 bytes
      const capped = { ...LONG, maxBytes: 2 * (51 + 4) + 10 };
      const park = (id: string) => store.recordDeliveryAttempt(ref, parkOf(id, { payload, deadLetters: capped }));
      expect(await park('a')).toMatchObject({ parkedNow: true, dropped: 0 });
      expect(await park('b')).toMatchObject({ parkedNow: true, dropped: 0 });
      expect(await park('c')).toMatchObject({ parkedNow: true, depth: 2, dropped: 1 });
      expect(await listed(ref, capped)).toEqual(['b', 'c']);
      // Redriven and purged ones free their bytes.
      expect(await store.purgeDeadLetter(ref, 'b')).toBe(true);
      expect(await park('d')).toMatchObject({ parkedNow: true, depth: 2, dropped: 0 });
      // One larger than the whole cap is not parked, and says so.
      const huge = JSON.stringify('x'.repeat(200));
      const refused = await store.recordDeliveryAttempt(ref, parkOf('e', { payload: huge, deadLetters: capped }));
      expect(refused).toMatchObject({ deadLetter: false, parkedNow: false, depth: 0, dropped: 3 });
      expect(await listed(ref, capped)).toEqual([]);
    });

    it('drops at most a bounded batch past their retention per call, in every store alike', async () => {
      const ref = freshQueue();
      const count = DEAD_LETTER_PRUNE_BATCH.expired + 50;
      await Promise.all(Array.from({ length: count }, (_, i) => store.recordDeliveryAttempt(ref, parkOf(`m${i}`))));
      await subject.pass(20);
      const short = { ...LONG, retentionMs: 10 };
      expect(await store.countDeadLetters(ref, short)).toBe(50);
      expect(await store.countDeadLetters(ref, short)).toBe(0);
    });

    it('drops at most a bounded batch past the length cap per call, in every store alike', async () => {
      const ref = freshQueue();
      const count = DEAD_LETTER_PRUNE_BATCH.overCap + 20;
      await Promise.all(Array.from({ length: count }, (_, i) => store.recordDeliveryAttempt(ref, parkOf(`m${i}`))));
      const none = { ...LONG, maxLength: 0 };
      expect(await store.countDeadLetters(ref, none)).toBe(20);
      expect(await store.countDeadLetters(ref, none)).toBe(0);
    });
  });
}
