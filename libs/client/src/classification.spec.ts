import { AttemptTimeoutError, HttpStatusError } from './errors';
import { classify, defaultClassifier, grpcClassifier, retryDenial, type Failure } from './classification';
import { parseRetryAfter } from './fetch';
import { ConnectTimeoutError } from './transport/http';

describe('classification', () => {
  it.each<[string, unknown, Failure | undefined]>([
    ['attempt timeout', new AttemptTimeoutError(100), { error: 'timeout' }],
    ['connect timeout', new ConnectTimeoutError(100), { error: 'connection' }],
    ['ECONNREFUSED', Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), { error: 'connection' }],
    [
      'fetch failed with a cause',
      new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }),
      { error: 'connection' },
    ],
    ['undici headers timeout', { code: 'UND_ERR_HEADERS_TIMEOUT' }, { error: 'timeout' }],
    ['AbortSignal.timeout', new DOMException('timed out', 'TimeoutError'), { error: 'timeout' }],
    ['axios-like response status', { response: { status: 502 } }, { status: 502 }],
    ['statusCode', { statusCode: 429 }, { status: 429 }],
    ['unknown', new Error('boom'), undefined],
  ])('%s', (_name, error, expected) => {
    expect(defaultClassifier(error)).toEqual(expected);
  });

  it('an HTTP status error carries its Retry-After and pushback', () => {
    const error = new HttpStatusError(new Response('', { status: 429 }), 2000, true);
    expect(defaultClassifier(error)).toEqual({ status: 429, retryAfterMs: 2000, retriedDownstream: true });
  });

  it.each([
    [14, { status: 503 }],
    [4, { error: 'timeout' }],
    [8, { status: 429 }],
    [5, { status: 404 }],
    [13, { status: 500 }],
  ])('gRPC code %d', (code, expected) => {
    expect(grpcClassifier({ code, details: 'x', metadata: {} })).toEqual(expected);
  });

  it('custom classifiers come first; an unknown error is other', () => {
    const custom = (error: unknown) => (error === 'quota' ? { status: 429, retryAfterMs: 50 } : undefined);
    expect(classify('quota', [custom])).toEqual({ status: 429, retryAfterMs: 50 });
    expect(classify(new Error('x'), [custom])).toEqual({ error: 'other' });
    expect(classify({ code: 14, details: '' }, [grpcClassifier])).toEqual({ status: 503 });
  });

  it.each<[Failure, boolean, boolean, ReturnType<typeof retryDenial>]>([
    [{ error: 'timeout' }, true, false, null],
    [{ error: 'connection' }, false, false, 'not_idempotent'],
    [{ error: 'connection' }, false, true, null],
    [{ status: 503 }, false, true, null],
    [{ status: 429 }, false, true, null],
    [{ status: 408 }, false, true, null],
    [{ status: 500 }, false, true, 'not_idempotent'],
    [{ status: 500 }, true, false, null],
    [{ status: 502 }, true, false, null],
    [{ status: 404 }, true, true, 'not_retriable'],
    [{ status: 400 }, true, false, 'not_retriable'],
    [{ status: 503 }, false, false, 'not_idempotent'],
  ])('retryDenial(%j, idempotent %s, key %s) = %s', (failure, idempotent, key, expected) => {
    expect(retryDenial(failure, idempotent, key)).toBe(expected);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
  it.each<[string | null, number | undefined]>([
    ['3', 3000],
    [' 0 ', 0],
    ['Wed, 21 Oct 2015 07:28:02 GMT', 2000],
    ['Wed, 21 Oct 2015 07:27:00 GMT', 0],
    ['soon', undefined],
    ['-1', undefined],
    [null, undefined],
    ['99999999', 86_400_000],
  ])('%j → %j', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
