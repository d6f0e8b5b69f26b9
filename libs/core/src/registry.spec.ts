import { forgetUnusedNames, registerName, registeredNames } from './registry';
import { writeVersionedDocument } from './versioned-documents';

describe('capped name registry', () => {
  it('registers up to the cap, refuses a new name past it, and frees places unused for the retention', () => {
    const registry = new Map<string, number>();
    expect(registerName(registry, 'b', 2, 0)).toBe('new');
    expect(registerName(registry, 'a', 2, 10)).toBe('new');
    expect(registerName(registry, 'c', 2, 20)).toBe('refused');
    expect(registerName(registry, 'b', 2, 30)).toBe('known');
    expect(registeredNames(registry)).toEqual(['a', 'b']);
    expect(forgetUnusedNames(registry, 100, 110)).toEqual(['a']);
    expect(registerName(registry, 'c', 2, 110)).toBe('new');
  });
});

describe('writeVersionedDocument', () => {
  it('versions writes and deletes, and honours the conditions', () => {
    expect(writeVersionedDocument(undefined, { a: 1 })).toEqual({ outcome: 'written', version: 1 });
    expect(writeVersionedDocument(undefined, null)).toEqual({ outcome: 'not_found' });
    const stored = { version: 3, document: { a: 1 } };
    expect(writeVersionedDocument(stored, { a: 2 }, { ifVersion: 3 })).toEqual({ outcome: 'written', version: 4 });
    expect(writeVersionedDocument(stored, { a: 2 }, { ifVersion: 2 })).toEqual({
      outcome: 'precondition_failed',
      version: 3,
    });
    expect(writeVersionedDocument(stored, { a: 2 }, { ifAbsent: true })).toEqual({
      outcome: 'precondition_failed',
      version: 3,
    });
    const deleted = { version: 4, document: null };
    expect(writeVersionedDocument(deleted, { a: 3 }, { ifAbsent: true })).toEqual({ outcome: 'written', version: 5 });
    expect(writeVersionedDocument(deleted, { a: 3 }, { ifVersion: 4 })).toEqual({
      outcome: 'precondition_failed',
      version: 0,
    });
  });
});
