import { ManualClock } from '@sluice/core';
import {
  contextFromHeaders,
  currentContext,
  remainingDeadlineMs,
  runWithContext,
  runWithDeadline,
} from './request-context';

describe('request context', () => {
  const clock = new ManualClock(1_000_000);

  it('reads the deadline and the attempt from headers; malformed values are ignored', () => {
    expect(contextFromHeaders({ 'sluice-deadline-ms': '800', 'sluice-attempt': '2' }, { clock })).toEqual({
      attempt: 2,
      deadlineAt: 1_000_800,
    });
    expect(contextFromHeaders({ 'sluice-deadline-ms': 'soon', 'sluice-attempt': '-3' }, { clock })).toEqual({
      attempt: 1,
    });
    expect(contextFromHeaders({ 'sluice-deadline-ms': ['50', '900'] }, { clock })).toEqual({
      attempt: 1,
      deadlineAt: 1_000_050,
    });
    expect(contextFromHeaders({ 'sluice-deadline-ms': '999999999999' }, { clock }).deadlineAt).toBe(
      1_000_000 + 86_400_000,
    );
  });

  it('a nested deadline never extends the enclosing one', () => {
    runWithContext({ attempt: 3, deadlineAt: 1_000_300 }, () => {
      runWithDeadline(
        1000,
        () => {
          expect(currentContext()).toEqual({ attempt: 3, deadlineAt: 1_000_300 });
          expect(remainingDeadlineMs(clock)).toBe(300);
        },
        clock,
      );
      runWithDeadline(100, () => expect(currentContext()?.deadlineAt).toBe(1_000_100), clock);
    });
    expect(currentContext()).toBeUndefined();
    expect(remainingDeadlineMs(clock)).toBeUndefined();
  });

  it('the context follows async continuations', async () => {
    await runWithContext({ attempt: 2 }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(currentContext()?.attempt).toBe(2);
    });
  });
});
