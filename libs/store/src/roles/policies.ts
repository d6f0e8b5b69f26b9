import type { PolicyWriteCondition, PolicyWriteOutcome } from '@sluice/core';

export type { PolicyWriteCondition, PolicyWriteOutcome } from '@sluice/core';

/** The policy documents a namespace holds: its default, and one per dependency, named limit or queue. */
export type PolicyKind = 'default' | 'dep' | 'limit' | 'queue';

export interface PolicyDocumentRef {
  kind: PolicyKind;
  /** The dependency, limit or queue; '' for the namespace default. */
  name: string;
}

export interface StoredPolicy extends PolicyDocumentRef {
  /** Grows on every write and delete: the document's ETag. */
  version: number;
  document: unknown;
}

/** Versioned policy documents, shared by every instance. */
export interface PolicyStore {
  /** Every policy document of a namespace. */
  readPolicies(namespace: string): Promise<StoredPolicy[]>;

  /** Writes (or with `document` null deletes) one policy document, and tells every instance. */
  writePolicy(
    namespace: string,
    ref: PolicyDocumentRef,
    document: unknown,
    condition?: PolicyWriteCondition,
  ): Promise<PolicyWriteOutcome>;
}
