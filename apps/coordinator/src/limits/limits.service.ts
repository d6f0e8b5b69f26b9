import { Inject, Injectable } from '@nestjs/common';
import type { TakeDecision } from '@sluice/protocol';
import type { RateLimitRef, Store } from '@sluice/store';
import { ApiError, validationFailed } from '../common/api-error';
import { MetricsService } from '../metrics/metrics.service';
import { PolicyService } from '../policies/policy.service';
import { STORE } from '../store/store.provider';

/**
 * Named rate limits: one GCRA decision per take, in one store call. With a caller-chosen
 * `requestId`, a repeat answers the first granted take without taking again.
 */
@Injectable()
export class LimitsService {
  constructor(
    @Inject(STORE) private readonly store: Store,
    private readonly policies: PolicyService,
    private readonly metrics: MetricsService,
  ) {}

  async take(ref: RateLimitRef, cost = 1, requestId?: string): Promise<TakeDecision> {
    const policy = await this.policies.forLimit(ref.namespace, ref.limit);
    if (!policy)
      throw new ApiError(404, 'not_found', `no limit "${ref.limit}" is defined in namespace "${ref.namespace}"`);
    if (cost > policy.burst) {
      throw validationFailed([{ field: 'cost', message: `must not exceed the limit's burst (${policy.burst})` }]);
    }
    const outcome = await this.store.takeRateLimit(ref, policy, cost, requestId);
    const result = outcome.allow ? 'granted' : 'rate_limited';
    this.metrics.rateLimitDecisions.inc({ namespace: ref.namespace, limit: ref.limit, result });
    const shadow = policy.mode === 'shadow';
    if (shadow && !outcome.allow) {
      this.metrics.shadowDenials.inc({ namespace: ref.namespace, dependency: ref.limit, kind: 'take' });
    }
    return { ...outcome, allow: outcome.allow || shadow, shadow };
  }
}
