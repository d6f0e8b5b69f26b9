import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { AdmitDecision } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { DecisionRoute } from '../http/routes';
import { ERRORS, tooManyDependencies } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { AdmitRequestDto } from './admit.dto';
import { AdmitService } from './admit.service';
import { ServedDirectly } from '../http/direct-routes';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/deps/:dep/admit')
export class AdmitController {
  constructor(private readonly admissions: AdmitService) {}

  @Post()
  @HttpCode(200)
  @ServedDirectly()
  @DecisionRoute({
    serialized: true,
    operationId: 'admitCall',
    summary: 'May I make this call?',
    description:
      'For calls that need a per-call check: a half-open breaker\u2019s probe, a rate limit, a concurrency limit ' +
      '(the dependency policy\u2019s `rateLimit` and `concurrency`). While half-open, the caller that gets the ' +
      '`probe` makes the trial call and reports its outcome with the token (`probes` in POST ' +
      '/v1/{ns}/reports); every other call is denied `breaker_open`. A granted call under a concurrency limit ' +
      'gets a `lease` to release when it ends. The body may be left out (`cost` 1). In shadow mode `allow` is ' +
      'true and `reason` says what enforcement would have said.',
    responses: [{ status: 200, description: 'The decision (granted or not).', schema: 'AdmitDecision' }],
    errors: [
      { ...ERRORS.validationFailed, description: '`cost` over the rate limit\u2019s `burst`.' },
      tooManyDependencies(),
    ],
    optionalBody: true,
  })
  admit(@Param() params: DependencyParams, @Body() body: AdmitRequestDto = {}): Promise<AdmitDecision> {
    return this.admissions.admit({ namespace: params.ns, dependency: params.dep }, body.cost, body.requestId);
  }
}
