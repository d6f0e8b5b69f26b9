import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { TakeDecision } from '@sluice/protocol';
import { LimitParams } from '../common/params.dto';
import { DecisionRoute } from '../http/routes';
import { ERRORS, notFound, RETRY_AFTER } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { TakeRequestDto } from './take.dto';
import { LimitsService } from './limits.service';
import { ServedDirectly } from '../http/direct-routes';

const wholeSeconds = (ms: number) => String(Math.ceil(ms / 1000));

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' } });

@ApiTags(TAGS.limits.name)
@Controller('v1/:ns/limits/:limit/take')
export class LimitsController {
  constructor(private readonly limits: LimitsService) {}

  /** Answers 200 either way, with the IETF RateLimit headers and, when denied, Retry-After. */
  @Post()
  @HttpCode(200)
  @ServedDirectly()
  @DecisionRoute({
    serialized: true,
    operationId: 'takeLimit',
    summary: 'Take from a named rate limit',
    description:
      'One decision (GCRA) against the limit\u2019s document (PUT /admin/v1/{ns}/policies/limits/{limit}), per ' +
      '`key`: each key has its own allowance of `burst`, refilled at `rate` per `periodMs`. A limit in shadow ' +
      'mode answers `allow: true` and counts the denials.',
    responses: [
      {
        status: 200,
        description: 'The decision (granted or not).',
        schema: 'TakeDecision',
        headers: {
          'RateLimit-Limit': integerHeader('The burst.'),
          'RateLimit-Remaining': integerHeader('What is left of the burst.'),
          'RateLimit-Reset': integerHeader('Seconds until the burst is full again, rounded up.'),
          'Retry-After': {
            ...RETRY_AFTER['Retry-After'],
            description: 'Only when denied: seconds until the take would be granted, rounded up.',
          },
        },
      },
    ],
    errors: [
      notFound('No such limit: the namespace has no document for `{limit}`.'),
      { ...ERRORS.validationFailed, description: '`cost` over the limit\u2019s `burst`.' },
      ERRORS.tooManyNamespaces,
    ],
  })
  async take(
    @Param() params: LimitParams,
    @Body() body: TakeRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TakeDecision> {
    const ref = { namespace: params.ns, limit: params.limit, key: body.key };
    const decision = await this.limits.take(ref, body.cost, body.requestId);
    reply.header('ratelimit-limit', String(decision.limit));
    reply.header('ratelimit-remaining', String(decision.remaining));
    reply.header('ratelimit-reset', wholeSeconds(decision.resetMs));
    if (!decision.allow) reply.header('retry-after', wholeSeconds(Math.max(decision.retryAfterMs, 1)));
    return decision;
  }
}
