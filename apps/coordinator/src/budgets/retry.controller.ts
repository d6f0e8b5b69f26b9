import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { RetryDecision } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { DecisionRoute } from '../http/routes';
import { tooManyDependencies } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { RetryRequestDto } from './retry.dto';
import { RetryService } from './retry.service';
import { ServedDirectly } from '../http/direct-routes';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/deps/:dep/retry')
export class RetryController {
  constructor(private readonly retries: RetryService) {}

  @Post()
  @HttpCode(200)
  @ServedDirectly()
  @DecisionRoute({
    serialized: true,
    operationId: 'decideRetry',
    summary: 'May I retry?',
    description:
      'Asked before each retry of a failed call to `{dep}`. Checked in order: a failure not worth retrying ' +
      '(a `status` other than 408, 429 or 5xx; no `status` counts as a transport error) → `not_retriable`; ' +
      '`idempotent` false → `not_idempotent`; `attempt` + 1 over the policy\u2019s `maxAttempts` → ' +
      '`max_attempts`; then, atomically for the whole fleet, an open breaker → `breaker_open`, a delay plus the ' +
      'dependency\u2019s p99 latency past `deadlineMs` → `deadline_exceeded`, an empty budget → ' +
      '`budget_exhausted`. Only a granted retry is counted in the budget.\n\n' +
      'In shadow mode `allow` is true and `reason` says what enforcement would have said, except ' +
      '`not_retriable` and `not_idempotent`, which are enforced even in shadow mode.',
    responses: [{ status: 200, description: 'The decision (granted or not).', schema: 'RetryDecision' }],
    errors: [tooManyDependencies()],
  })
  decide(@Param() params: DependencyParams, @Body() body: RetryRequestDto): Promise<RetryDecision> {
    return this.retries.decide({ namespace: params.ns, dependency: params.dep }, body);
  }
}
