import type { DependencyPolicy } from '@sluice/protocol';
import type { FieldProblem } from '../config/validation-messages';

/** Rules across fields of a merged policy, which per-field validation cannot see. */
export function crossFieldProblems(policy: DependencyPolicy, path = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (policy.backoff.capMs < policy.backoff.baseMs) {
    problems.push({ field: `${path}backoff.capMs`, message: 'capMs must not be below backoff.baseMs' });
  }
  if (policy.breaker.maxOpenMs < policy.breaker.openMs) {
    problems.push({ field: `${path}breaker.maxOpenMs`, message: 'maxOpenMs must not be below breaker.openMs' });
  }
  return problems;
}
