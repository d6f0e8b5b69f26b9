import type {
  BackoffPolicy,
  DependencyPolicy,
  DependencyPolicyOverride,
  IdempotencyPolicy,
  QueuePolicy,
} from '@sluice/protocol';
import type { FieldProblem } from '../config/validation-messages';

/**
 * Rules across fields of a merged policy, which per-field validation cannot see; `override` is the
 * document that was merged (a maxRatio it sets must not be below the merged ratio; one it leaves
 * out is raised to the ratio by the merge).
 */
export function crossFieldProblems(
  policy: DependencyPolicy,
  path = '',
  override: DependencyPolicyOverride = {},
): FieldProblem[] {
  const problems = backoffProblems(policy.backoff, path);
  const maxRatio = override.retryBudget?.maxRatio;
  if (maxRatio !== undefined && maxRatio < policy.retryBudget.ratio) {
    problems.push({ field: `${path}retryBudget.maxRatio`, message: 'maxRatio must not be below retryBudget.ratio' });
  }
  if (policy.breaker.maxOpenMs < policy.breaker.openMs) {
    problems.push({ field: `${path}breaker.maxOpenMs`, message: 'maxOpenMs must not be below breaker.openMs' });
  }
  return problems;
}

/** Rules across fields of a merged queue policy. */
export function queueCrossFieldProblems(policy: QueuePolicy, path = ''): FieldProblem[] {
  return backoffProblems(policy.backoff, path);
}

function backoffProblems(backoff: BackoffPolicy, path: string): FieldProblem[] {
  return backoff.capMs < backoff.baseMs
    ? [{ field: `${path}backoff.capMs`, message: 'capMs must not be below backoff.baseMs' }]
    : [];
}

/** Within one section, the default retention is not above the maximum (across levels it is capped). */
export function idempotencyProblems(policy: Partial<IdempotencyPolicy>, path = ''): FieldProblem[] {
  return (policy.retentionSeconds ?? 0) > (policy.maxRetentionSeconds ?? Infinity)
    ? [{ field: `${path}retentionSeconds`, message: 'retentionSeconds must not exceed maxRetentionSeconds' }]
    : [];
}
