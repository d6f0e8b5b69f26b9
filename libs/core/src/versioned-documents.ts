/**
 * Conditional writes of versioned documents (the policy documents and their ETags), as a pure
 * function over the stored version. The Lua twin is write_policy-1.lua. A version grows on every
 * write and delete and outlives a delete, so an ETag is never reused for another document.
 */

/** A stored document and its version; `document` null once deleted (the version lives on). */
export interface VersionedDocument {
  version: number;
  document: unknown;
}

/** Write only if the stored document has this version, or only if there is none. */
export type PolicyWriteCondition = { ifVersion: number } | { ifAbsent: true };

export type PolicyWriteOutcome =
  | { outcome: 'written'; version: number }
  | { outcome: 'precondition_failed'; version: number }
  | { outcome: 'not_found' };

/** Decides a write (`document` null deletes); when written, the new version is the outcome's. */
export function writeVersionedDocument(
  stored: VersionedDocument | undefined,
  document: unknown,
  condition?: PolicyWriteCondition,
): PolicyWriteOutcome {
  const exists = stored !== undefined && stored.document !== null;
  const version = stored?.version ?? 0;
  if (condition && 'ifAbsent' in condition && exists) return { outcome: 'precondition_failed', version };
  if (condition && 'ifVersion' in condition && (!exists || condition.ifVersion !== version)) {
    return { outcome: 'precondition_failed', version: exists ? version : 0 };
  }
  if (document === null && !exists) return { outcome: 'not_found' };
  return { outcome: 'written', version: version + 1 };
}
