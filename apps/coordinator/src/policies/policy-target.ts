import type { PolicyDocumentRef, PolicyKind } from '@sluice/store';

/** One policy document of one namespace, as the admin API addresses it. */
export interface PolicyTarget extends PolicyDocumentRef {
  namespace: string;
}

const PATHS: Record<PolicyKind, string> = { default: 'default', dep: 'deps', limit: 'limits', queue: 'queues' };

/** The document's path under `/admin/v1/{ns}/policies/` and its audit target: `default`, `deps/payments-api`, … */
export function policyTargetLabel(ref: PolicyDocumentRef): string {
  return ref.kind === 'default' ? PATHS.default : `${PATHS[ref.kind]}/${ref.name}`;
}

/** A stored document with its version, served as the body with `ETag: "<version>"`. */
export class VersionedPolicy {
  constructor(
    readonly version: number,
    readonly document: unknown,
  ) {}

  get etag(): string {
    return `"${this.version}"`;
  }
}
