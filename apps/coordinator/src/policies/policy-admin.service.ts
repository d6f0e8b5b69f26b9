import { Inject, Injectable } from '@nestjs/common';
import {
  mergeDependencyPolicy,
  type DependencyPolicyOverride,
  type PolicyDocument,
  type PolicyDocumentPage,
} from '@sluice/protocol';
import type { PolicyWriteCondition, PolicyWriteOutcome, Store, StoredPolicy } from '@sluice/store';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../auth/token-registry';
import { ApiError, validationFailed } from '../common/api-error';
import { DependencyRegistry } from '../dependencies/dependency-registry.service';
import { STORE } from '../store/store.provider';
import { preconditionFailed, type Precondition } from './policy-preconditions';
import { policyTargetLabel, VersionedPolicy, type PolicyTarget } from './policy-target';
import { validatePolicyOverride, validateQueuePolicy, validateRateLimit, type Validation } from './policy-validation';
import { PolicyService } from './policy.service';

/** Who changes a document, on what condition, and why (`?reason=`, kept in the audit log). */
export interface PolicyChange {
  actor: Principal;
  precondition: Precondition;
  reason?: string;
}

/** Documents in a page of the list when the caller asks for no size. */
const DEFAULT_PAGE_SIZE = 100;

/** A write whose precondition needs the current version (`If-Match: *` or a list) is retried this often on a race. */
const CONDITIONAL_WRITE_ATTEMPTS = 3;

/**
 * The admin API's policy documents: read, written and deleted in the store with versions as
 * ETags, validated field by field, applied by every instance at once, and audited.
 */
@Injectable()
export class PolicyAdminService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly registry: DependencyRegistry,
    private readonly audit: AuditService,
  ) {}

  async read(target: PolicyTarget): Promise<VersionedPolicy> {
    const stored = find(await this.store.readPolicies(target.namespace), target);
    if (!stored) throw notFound(target);
    return new VersionedPolicy(stored.version, stored.document);
  }

  /**
   * A page of the namespace's documents in the order of their targets (`default`, `deps/…`,
   * `limits/…`, `queues/…`), those after `cursor` (the last target of the previous page).
   */
  async list(namespace: string, page: { limit?: number; cursor?: string }): Promise<PolicyDocumentPage> {
    const limit = page.limit ?? DEFAULT_PAGE_SIZE;
    const after = (await this.store.readPolicies(namespace))
      .map((stored) => ({ target: policyTargetLabel(stored), stored }))
      .filter(({ target }) => page.cursor === undefined || target > page.cursor)
      .sort((a, b) => (a.target < b.target ? -1 : 1));
    const items = after.slice(0, limit).map(({ target, stored }) => ({
      target,
      etag: new VersionedPolicy(stored.version, stored.document).etag,
      document: stored.document as PolicyDocument,
    }));
    return { items, next: after.length > limit ? items[items.length - 1].target : null };
  }

  /** Validates and stores `document` (as sent: omitted fields take the defaults when it is used). */
  async put(target: PolicyTarget, document: object, change: PolicyChange): Promise<VersionedPolicy> {
    const plain = JSON.parse(JSON.stringify(document)) as object;
    await this.validate(target, plain);
    if (target.kind === 'dep') await this.registry.admitOperator(target.namespace, target.name, 'dep');
    const version = await this.write(target, plain, change.precondition);
    await this.changed(target, 'policy.put', change);
    return new VersionedPolicy(version, plain);
  }

  async remove(target: PolicyTarget, change: PolicyChange): Promise<void> {
    await this.write(target, null, change.precondition);
    await this.changed(target, 'policy.delete', change);
  }

  /**
   * Field rules come from the DTOs; rules across fields are checked on what the document will be
   * overlaid on now: the file's default for a namespace default, the namespace default for a dependency.
   */
  private async validate(target: PolicyTarget, document: object): Promise<void> {
    let result: Validation<unknown>;
    if (target.kind === 'limit') result = validateRateLimit(document);
    else if (target.kind === 'queue') result = validateQueuePolicy(document);
    else {
      let base = this.policies.fileDefault;
      if (target.kind === 'dep') {
        const namespaceDefault = find(await this.store.readPolicies(target.namespace), { kind: 'default', name: '' });
        base = mergeDependencyPolicy(base, namespaceDefault?.document as DependencyPolicyOverride | undefined);
      }
      result = validatePolicyOverride(document, '', base);
    }
    if (!result.ok) throw validationFailed(result.problems);
  }

  /** Writes (or with null deletes) under the precondition; returns the new version. */
  private async write(target: PolicyTarget, document: object | null, precondition: Precondition): Promise<number> {
    const direct = directCondition(precondition);
    if (direct !== undefined) return this.outcome(target, precondition, await this.writeIf(target, document, direct));
    // `*` or several versions: read the current version, then write only if it is still that one.
    for (let attempt = 1; ; attempt++) {
      const current = find(await this.store.readPolicies(target.namespace), target);
      if (!current || (precondition.type === 'version' && !precondition.versions.includes(current.version))) {
        throw preconditionFailed(precondition, current?.version);
      }
      const outcome = await this.writeIf(target, document, { ifVersion: current.version });
      if (outcome.outcome !== 'precondition_failed' || attempt >= CONDITIONAL_WRITE_ATTEMPTS) {
        return this.outcome(target, precondition, outcome);
      }
    }
  }

  private writeIf(
    target: PolicyTarget,
    document: object | null,
    condition: PolicyWriteCondition | null,
  ): Promise<PolicyWriteOutcome> {
    const ref = { kind: target.kind, name: target.name };
    return this.store.writePolicy(target.namespace, ref, document, condition ?? undefined);
  }

  private outcome(target: PolicyTarget, precondition: Precondition, outcome: PolicyWriteOutcome): number {
    if (outcome.outcome === 'written') return outcome.version;
    if (outcome.outcome === 'not_found') throw notFound(target);
    throw preconditionFailed(precondition, outcome.version > 0 ? outcome.version : undefined);
  }

  /** This instance applies the change at once (others on the store's event); then it is audited. */
  private async changed(target: PolicyTarget, action: string, change: PolicyChange): Promise<void> {
    this.policies.invalidate(target.namespace);
    await this.audit.record(change.actor, {
      action,
      namespace: target.namespace,
      target: policyTargetLabel(target),
      reason: change.reason || null, // `?reason=` with no text is no reason
    });
  }
}

/**
 * The store condition for a precondition it can check by itself; null for none; undefined when
 * the current version must be read first (`*`, several versions).
 */
function directCondition(precondition: Precondition): PolicyWriteCondition | null | undefined {
  switch (precondition.type) {
    case 'none':
      return null;
    case 'absent':
      return { ifAbsent: true };
    case 'version':
      // No version of ours (e.g. only weak tags): version 0 never matches a stored document.
      if (precondition.versions.length <= 1) return { ifVersion: precondition.versions[0] ?? 0 };
      return undefined;
    case 'exists':
      return undefined;
  }
}

function find(stored: StoredPolicy[], ref: { kind: string; name: string }): StoredPolicy | undefined {
  return stored.find((policy) => policy.kind === ref.kind && policy.name === ref.name);
}

function notFound(target: PolicyTarget): ApiError {
  return new ApiError(
    404,
    'not_found',
    `namespace "${target.namespace}" has no policy document ${policyTargetLabel(target)}`,
  );
}
