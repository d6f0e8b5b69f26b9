import type { FailureKind } from '@sluice/protocol';
import { isRetriableFailure, preBudgetDenial, type RetryAttempt } from './retry-classification';

function attempt(overrides: Partial<RetryAttempt> = {}): RetryAttempt {
  return { attempt: 1, idempotent: true, ...overrides };
}

const ERROR_KINDS: FailureKind[] = ['timeout', 'connection', 'other'];

describe('isRetriableFailure', () => {
  it.each([400, 401, 403, 404, 405, 409, 410, 413, 422, 499])('%p is not retriable', (status) => {
    expect(isRetriableFailure(status)).toBe(false);
  });

  it.each([408, 429, 500, 501, 502, 503, 504, 599])('%p is retriable', (status) => {
    expect(isRetriableFailure(status)).toBe(true);
  });

  it('a failure without a status (transport error) is retriable', () => {
    expect(isRetriableFailure(undefined)).toBe(true);
  });

  it('only 408 and 429 are retriable among the 4xx', () => {
    const retriable4xx: number[] = [];
    for (let status = 400; status <= 499; status++) if (isRetriableFailure(status)) retriable4xx.push(status);
    expect(retriable4xx).toEqual([408, 429]);
  });

  it('every 5xx is retriable', () => {
    for (let status = 500; status <= 599; status++) expect(isRetriableFailure(status)).toBe(true);
  });
});

describe('preBudgetDenial', () => {
  describe('status classification', () => {
    it.each([400, 401, 403, 404, 409, 422])('status %p → not_retriable', (status) => {
      expect(preBudgetDenial(attempt({ status }), 3)).toBe('not_retriable');
    });

    it.each([408, 429, 500, 502, 503, 504])('status %p → may go on to the budget', (status) => {
      expect(preBudgetDenial(attempt({ status }), 3)).toBeNull();
    });

    it.each(ERROR_KINDS)('error %p without a status → may go on to the budget', (error) => {
      expect(preBudgetDenial(attempt({ error }), 3)).toBeNull();
    });

    it('no status and no error → may go on to the budget', () => {
      expect(preBudgetDenial(attempt(), 3)).toBeNull();
    });

    it('a 4xx status decides even when an error kind is also given', () => {
      expect(preBudgetDenial(attempt({ status: 404, error: 'timeout' }), 3)).toBe('not_retriable');
    });
  });

  describe('idempotency', () => {
    it.each([503, 500, 429, 408, undefined])('a non-idempotent retry is not_idempotent (status %p)', (status) => {
      expect(preBudgetDenial(attempt({ idempotent: false, status }), 3)).toBe('not_idempotent');
    });

    it.each(ERROR_KINDS)('a non-idempotent retry after error %p is not_idempotent', (error) => {
      expect(preBudgetDenial(attempt({ idempotent: false, error }), 3)).toBe('not_idempotent');
    });
  });

  describe('maxAttempts (counts the first attempt too)', () => {
    it('with maxAttempts 3, retries 1 and 2 pass and retry 3 is max_attempts', () => {
      expect(preBudgetDenial(attempt({ attempt: 1, status: 503 }), 3)).toBeNull();
      expect(preBudgetDenial(attempt({ attempt: 2, status: 503 }), 3)).toBeNull();
      expect(preBudgetDenial(attempt({ attempt: 3, status: 503 }), 3)).toBe('max_attempts');
      expect(preBudgetDenial(attempt({ attempt: 4, status: 503 }), 3)).toBe('max_attempts');
      expect(preBudgetDenial(attempt({ attempt: 100, status: 503 }), 3)).toBe('max_attempts');
    });

    it('with maxAttempts 1, no retry is allowed', () => {
      expect(preBudgetDenial(attempt({ attempt: 1 }), 1)).toBe('max_attempts');
    });

    it('with maxAttempts 2, only the first retry passes', () => {
      expect(preBudgetDenial(attempt({ attempt: 1 }), 2)).toBeNull();
      expect(preBudgetDenial(attempt({ attempt: 2 }), 2)).toBe('max_attempts');
    });

    it('for every maxAttempts, exactly retries 1 … maxAttempts-1 pass', () => {
      for (let maxAttempts = 1; maxAttempts <= 10; maxAttempts++) {
        const passing: number[] = [];
        for (let n = 1; n <= 12; n++)
          if (preBudgetDenial(attempt({ attempt: n }), maxAttempts) === null) passing.push(n);
        expect(passing).toEqual(Array.from({ length: maxAttempts - 1 }, (_, i) => i + 1));
      }
    });
  });

  describe('precedence: not_retriable > not_idempotent > max_attempts', () => {
    it('not_retriable beats not_idempotent', () => {
      expect(preBudgetDenial(attempt({ status: 400, idempotent: false }), 3)).toBe('not_retriable');
    });

    it('not_retriable beats max_attempts', () => {
      expect(preBudgetDenial(attempt({ status: 422, attempt: 5 }), 3)).toBe('not_retriable');
    });

    it('not_retriable beats both', () => {
      expect(preBudgetDenial(attempt({ status: 403, idempotent: false, attempt: 5 }), 3)).toBe('not_retriable');
    });

    it('not_idempotent beats max_attempts', () => {
      expect(preBudgetDenial(attempt({ status: 503, idempotent: false, attempt: 5 }), 3)).toBe('not_idempotent');
      expect(preBudgetDenial(attempt({ error: 'timeout', idempotent: false, attempt: 3 }), 3)).toBe('not_idempotent');
    });

    it('is exhaustive over the combinations', () => {
      for (const status of [undefined, 400, 409, 408, 429, 503]) {
        for (const idempotent of [true, false]) {
          for (const n of [1, 2, 3, 4]) {
            const retriable = status === undefined || status === 408 || status === 429 || status >= 500;
            const expected = !retriable
              ? 'not_retriable'
              : !idempotent
                ? 'not_idempotent'
                : n >= 3
                  ? 'max_attempts'
                  : null;
            expect(preBudgetDenial({ attempt: n, idempotent, status }, 3)).toBe(expected);
          }
        }
      }
    });
  });
});
