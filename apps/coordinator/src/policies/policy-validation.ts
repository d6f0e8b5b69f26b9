import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  DEFAULT_DEPENDENCY_POLICY,
  DEFAULT_QUEUE_POLICY,
  mergeDependencyPolicy,
  mergeQueuePolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type QueuePolicyOverride,
} from '@sluice/protocol';
import type { FieldProblem } from '../config/validation-messages';
import { flattenValidationErrors } from '../config/validation-messages';
import { DependencyPolicyDto, IdempotencyPolicyDto, QueuePolicyDto } from './policy.dto';
import { backoffProblems, crossFieldProblems, idempotencyProblems } from './policy-rules';

export type Validation<T> = { ok: true; policy: T } | { ok: false; problems: FieldProblem[] };
export type PolicyValidation = Validation<DependencyPolicyOverride>;

/** Validates a policy document (or part of one) field by field; `path` prefixes field names. */
export function validatePolicyOverride(plain: unknown, path = ''): PolicyValidation {
  return validateDocument(DependencyPolicyDto, plain, path, (policy: DependencyPolicyOverride) =>
    crossFieldProblems(mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, policy), path),
  );
}

/** Validates a queue's policy document: `{maxAttempts, backoff}`. */
export function validateQueuePolicyOverride(plain: unknown, path = ''): Validation<QueuePolicyOverride> {
  return validateDocument(QueuePolicyDto, plain, path, (policy: QueuePolicyOverride) =>
    backoffProblems(mergeQueuePolicy(DEFAULT_QUEUE_POLICY, policy).backoff, `${path}backoff.`),
  );
}

/** Validates a namespace's idempotency settings: `{retentionSeconds, maxRetentionSeconds}`. */
export function validateIdempotencyPolicy(plain: unknown, path = ''): Validation<Partial<IdempotencyPolicy>> {
  return validateDocument(IdempotencyPolicyDto, plain, path, (policy: Partial<IdempotencyPolicy>) =>
    idempotencyProblems(policy, path),
  );
}

function validateDocument<T extends object>(
  dto: ClassConstructor<object>,
  plain: unknown,
  path: string,
  crossField: (policy: T) => FieldProblem[],
): Validation<T> {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    return { ok: false, problems: [{ field: path.replace(/\.$/, '') || 'policy', message: 'must be an object' }] };
  }
  const problems = flattenValidationErrors(
    validateSync(plainToInstance(dto, plain), { whitelist: true, forbidNonWhitelisted: true }),
  ).map((problem) => ({ ...problem, field: `${path}${problem.field}` }));
  if (problems.length > 0) return { ok: false, problems };
  const policy = plain as T;
  const crossFieldIssues = crossField(policy);
  return crossFieldIssues.length > 0 ? { ok: false, problems: crossFieldIssues } : { ok: true, policy };
}
