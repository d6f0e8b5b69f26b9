import { SCRIPT_OUTCOMES, ScriptCode, ScriptReplyError, luaCodeTable, scriptOutcome } from '../src/redis/script-codes';

describe('the script code table', () => {
  it('gives every code one outcome, and no two codes the same outcome', () => {
    const codes = Object.values(ScriptCode).filter((code): code is ScriptCode => typeof code === 'number');
    expect(
      Object.keys(SCRIPT_OUTCOMES)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual(codes.sort((a, b) => a - b));
    const outcomes = Object.values(SCRIPT_OUTCOMES);
    expect(new Set(outcomes).size).toBe(outcomes.length);
  });

  it('decodes a code the script may answer to its outcome', () => {
    expect(scriptOutcome('admit', ScriptCode.Granted, ['granted', 'breaker_open'])).toBe('granted');
    expect(scriptOutcome('write_policy', 33, ['written', 'precondition_failed', 'not_found'])).toBe('not_found');
  });

  it('turns a code the script may not answer, or no code at all, into ScriptReplyError', () => {
    expect(() => scriptOutcome('admit', ScriptCode.Claimed, ['granted', 'breaker_open'])).toThrow(ScriptReplyError);
    expect(() => scriptOutcome('admit', 99, ['granted'])).toThrow('script admit answered code 99');
    expect(() => scriptOutcome('admit', '1', ['granted'])).toThrow(ScriptReplyError);
    expect(() => scriptOutcome('admit', undefined, ['granted'])).toThrow(ScriptReplyError);
  });

  it('writes the same table for Lua', () => {
    expect(luaCodeTable()).toContain('granted = 1, budget_exhausted = 2');
    for (const [code, outcome] of Object.entries(SCRIPT_OUTCOMES)) {
      expect(luaCodeTable()).toContain(`${outcome} = ${code}`);
    }
  });
});
