import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { DEFAULT_DEPENDENCY_POLICY, mergeDependencyPolicy, type DependencyPolicyOverride } from '@sluice/protocol';
import type { FieldProblem } from '../config/validation-messages';
import { flattenValidationErrors } from '../config/validation-messages';
import { DependencyPolicyDto } from './policy.dto';
import { crossFieldProblems } from './policy-rules';

export type PolicyValidation = { ok: true; policy: DependencyPolicyOverride } | { ok: false; problems: FieldProblem[] };

/** Validates a policy document (or part of one) field by field; `path` prefixes field names. */
export function validatePolicyOverride(plain: unknown, path = ''): PolicyValidation {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    return { ok: false, problems: [{ field: path.replace(/\.$/, '') || 'policy', message: 'must be an object' }] };
  }
  const dto = plainToInstance(DependencyPolicyDto, plain);
  const problems = flattenValidationErrors(validateSync(dto, { whitelist: true, forbidNonWhitelisted: true })).map(
    (problem) => ({ ...problem, field: `${path}${problem.field}` }),
  );
  if (problems.length > 0) return { ok: false, problems };
  const policy = plain as DependencyPolicyOverride;
  const crossField = crossFieldProblems(mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, policy), path);
  return crossField.length > 0 ? { ok: false, problems: crossField } : { ok: true, policy };
}
