import {
  deadLetterPage,
  pruneDeadLetters,
  recordDeliveryAttempt,
  removeDeadLetter,
  type AttemptCounter,
  type DeadLetterQueue,
  type DeliveryAttemptInput,
} from './deliveries';

const NOW = 1_700_000_000_000;
const input = (fields: Partial<DeliveryAttemptInput> = {}): DeliveryAttemptInput => ({
  messageId: 'm1',
  error: 'boom',
  payload: '{"id":1}',
  maxAttempts: 2,
  attemptRetentionMs: 60_000,
  deadLetters: { retentionMs: 600_000, maxLength: 10 },
  ...fields,
});

/** Runs attempts as a store would, keeping what each step says to keep. */
function queueOf(...attempts: Array<Partial<DeliveryAttemptInput>>) {
  const counters = new Map<string, AttemptCounter>();
  let queue: DeadLetterQueue | undefined;
  const outcomes = attempts.map((fields, i) => {
    const attempt = input(fields);
    const step = recordDeliveryAttempt(counters.get(attempt.messageId), queue, attempt, NOW + i);
    if (step.counter) counters.set(attempt.messageId, step.counter.value);
    if (step.queue) queue = step.queue.value;
    return step;
  });
  return { outcomes, queue, counters };
}

describe('recordDeliveryAttempt', () => {
  it('counts, then parks on attempt maxAttempts, keeping the counter as long as the dead letter', () => {
    const { outcomes, queue } = queueOf({}, {});
    expect(outcomes[0]).toEqual({
      outcome: { attempt: 1, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 },
      counter: { value: { attempts: 1, firstAttemptAt: NOW, parked: false }, expiresAt: NOW + 60_000 },
    });
    expect(outcomes[1].outcome).toEqual({ attempt: 2, deadLetter: true, parkedNow: true, depth: 1, dropped: 0 });
    expect(outcomes[1].counter).toEqual({
      value: { attempts: 2, firstAttemptAt: NOW, parked: true },
      expiresAt: NOW + 1 + 600_000,
    });
    expect(deadLetterPage(queue, 10).items).toEqual([
      {
        messageId: 'm1',
        payload: '{"id":1}',
        error: 'boom',
        attempts: 2,
        deadLetteredAt: NOW + 1,
        firstAttemptAt: NOW,
      },
    ]);
  });

  it('leaves a parked message parked and uncounted, and a repeated numbered attempt unchanged', () => {
    const { outcomes } = queueOf({ attempt: 1 }, { attempt: 1 }, { attempt: 2 }, {});
    expect(outcomes[1]).toEqual({ outcome: { attempt: 1, deadLetter: false, parkedNow: false, depth: 0, dropped: 0 } });
    expect(outcomes[2].outcome.parkedNow).toBe(true);
    expect(outcomes[3]).toEqual({ outcome: { attempt: 2, deadLetter: true, parkedNow: false, depth: 1, dropped: 0 } });
  });
});

describe('dead letters', () => {
  it('pages oldest first with a cursor, prunes past retention and length, and removes one', () => {
    const parked = ['a', 'b', 'c'].map((messageId) => ({ messageId, maxAttempts: 1 }));
    const { queue } = queueOf(...parked);
    const first = deadLetterPage(queue, 2);
    expect(first.items.map((item) => item.messageId)).toEqual(['a', 'b']);
    expect(deadLetterPage(queue, 2, first.next ?? undefined)).toMatchObject({
      items: [{ messageId: 'c' }],
      next: null,
    });
    expect(pruneDeadLetters(queue, { retentionMs: 600_000, maxLength: 2 }, NOW + 2)).toEqual({ depth: 2, dropped: 1 });
    expect(removeDeadLetter(queue, 'b')).toMatchObject({ messageId: 'b' });
    expect(removeDeadLetter(queue, 'b')).toBeNull();
    expect(pruneDeadLetters(queue, { retentionMs: 1, maxLength: 10 }, NOW + 10)).toEqual({ depth: 0, dropped: 0 });
    expect(pruneDeadLetters(undefined, { retentionMs: 1, maxLength: 10 }, NOW)).toEqual({ depth: 0, dropped: 0 });
  });
});
