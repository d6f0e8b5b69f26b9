import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  DEFAULT_DEPENDENCY_POLICY,
  DEFAULT_QUEUE_POLICY,
  mergeDependencyPolicy,
  mergeQueuePolicy,
  type DependencyPolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type QueuePolicyOverride,
  type NamedLimitPolicy,
} from '@sluice/protocol';
import type { FieldProblem } from '../config/validation-messages';
import { flattenValidationErrors } from '../config/validation-messages';
import { DependencyPolicyDto, IdempotencyPolicyDto, NamedLimitPolicyDto, QueuePolicyDto } from './policy.dto';
import { crossFieldProblems, idempotencyProblems, queueCrossFieldProblems } from './policy-rules';

export type Validation<T> = { ok: true; policy: T } | { ok: false; problems: FieldProblem[] };
export type PolicyValidation = Validation<DependencyPolicyOverride>;

/**
 * Validates a dependency policy document (or part of one) field by field; `path` prefixes field
 * names. Rules across fields (backoff.capMs ≥ baseMs, breaker.maxOpenMs ≥ openMs, a stated
 * retryBudget.maxRatio ≥ ratio) are checked on the document overlaid on `base`, the policy it will
 * be overlaid on; `base` null skips them.
 */
export function validatePolicyOverride(
  plain: unknown,
  path = '',
  base: DependencyPolicy | null = DEFAULT_DEPENDENCY_POLICY,
): PolicyValidation {
  const fields = validateFields(DependencyPolicyDto, plain, path);
  if (!fields.ok || base === null) return fields;
  const crossField = crossFieldProblems(mergeDependencyPolicy(base, fields.policy), path, fields.policy);
  return crossField.length > 0 ? { ok: false, problems: crossField } : fields;
}

/** Validates a named limit's document: `rate`, `periodMs` and `burst`, all required; `mode` optional. */
export function validateRateLimit(plain: unknown, path = ''): Validation<NamedLimitPolicy> {
  return validateFields(NamedLimitPolicyDto, plain, path);
}

/** Validates a queue's document (every field optional; backoff.capMs ≥ baseMs once overlaid on the defaults). */
export function validateQueuePolicy(plain: unknown, path = ''): Validation<QueuePolicyOverride> {
  const fields = validateFields(QueuePolicyDto, plain, path);
  if (!fields.ok) return fields;
  const problems = queueCrossFieldProblems(mergeQueuePolicy(DEFAULT_QUEUE_POLICY, fields.policy), path);
  return problems.length > 0 ? { ok: false, problems } : fields;
}

/** Validates a namespace's idempotency settings: `{retentionSeconds, maxRetentionSeconds}`. */
export function validateIdempotencyPolicy(plain: unknown, path = ''): Validation<Partial<IdempotencyPolicy>> {
  const fields = validateFields(IdempotencyPolicyDto, plain, path);
  if (!fields.ok) return fields;
  const problems = idempotencyProblems(fields.policy, path);
  return problems.length > 0 ? { ok: false, problems } : fields;
}

/** Field-by-field checks of a plain object against a DTO: whitelisted, unknown fields refused. */
function validateFields<T extends object>(dto: ClassConstructor<T>, plain: unknown, path: string): Validation<T> {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    return { ok: false, problems: [{ field: path.replace(/\.$/, '') || 'policy', message: 'must be an object' }] };
  }
  const instance = plainToInstance(dto, plain);
  const problems = flattenValidationErrors(
    validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }),
  ).map((problem) => ({ ...problem, field: `${path}${problem.field}` }));
  // The plain object is what is kept: whitelisting found nothing to strip, or it is refused.
  return problems.length > 0 ? { ok: false, problems } : { ok: true, policy: plain as T };
}
