import { ApiError } from '../common/api-error';
import { parsePrecondition, preconditionFailed } from './policy-preconditions';

describe('write preconditions', () => {
  it.each([
    [{}, { type: 'none' }],
    [{ 'if-match': '*' }, { type: 'exists' }],
    [{ 'if-match': ' * ' }, { type: 'exists' }],
    [{ 'if-match': '"3"' }, { type: 'version', versions: [3] }],
    [{ 'if-match': '"3", "12"' }, { type: 'version', versions: [3, 12] }],
    [{ 'if-match': ['"3"', '"4"'] }, { type: 'version', versions: [3, 4] }],
    [{ 'if-match': 'W/"3"' }, { type: 'version', versions: [] }],
    [{ 'if-match': '"abc"' }, { type: 'version', versions: [] }],
    [{ 'if-match': '"0"' }, { type: 'version', versions: [] }],
    [{ 'if-match': '"a,b"' }, { type: 'version', versions: [] }],
    [{ 'if-none-match': '*' }, { type: 'absent' }],
  ])('reads %j as %j', (headers, expected) => {
    expect(parsePrecondition(headers)).toEqual(expected);
  });

  it.each([
    [{ 'if-match': '3' }, 'if-match'],
    [{ 'if-match': '' }, 'if-match'],
    [{ 'if-match': '"3' }, 'if-match'],
    [{ 'if-match': '"3",' }, 'if-match'],
    [{ 'if-match': '*, "3"' }, 'if-match'],
    [{ 'if-none-match': '"3"' }, 'if-none-match'],
    [{ 'if-match': '"3"', 'if-none-match': '*' }, 'if-none-match'],
  ])('refuses %j with a 400 naming %s', (headers, field) => {
    let error: unknown;
    try {
      parsePrecondition(headers);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).getStatus()).toBe(400);
    expect((error as ApiError).body()).toMatchObject({ code: 'validation_failed', details: [{ field }] });
  });

  it('answers 412 naming the header and the current ETag', () => {
    const stale = preconditionFailed({ type: 'version', versions: [2] }, 5);
    expect(stale.getStatus()).toBe(412);
    expect(stale.headers).toEqual({ etag: '"5"' });
    expect(stale.body()).toMatchObject({ code: 'precondition_failed', details: [{ field: 'if-match' }] });
    expect(preconditionFailed({ type: 'absent' }, 1).body()).toMatchObject({ details: [{ field: 'if-none-match' }] });
    expect(preconditionFailed({ type: 'exists' }, undefined).headers).toEqual({});
  });
});
