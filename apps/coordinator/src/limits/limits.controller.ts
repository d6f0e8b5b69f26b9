import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { TakeDecision } from '@sluice/protocol';
import { LimitParams } from '../common/params.dto';
import { TakeRequestDto } from './take.dto';
import { LimitsService } from './limits.service';

const wholeSeconds = (ms: number) => String(Math.ceil(ms / 1000));

@Controller('v1/:ns/limits/:limit/take')
export class LimitsController {
  constructor(private readonly limits: LimitsService) {}

  /** Answers 200 either way, with the IETF RateLimit headers and, when denied, Retry-After. */
  @Post()
  @HttpCode(200)
  async take(
    @Param() params: LimitParams,
    @Body() body: TakeRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TakeDecision> {
    const decision = await this.limits.take({ namespace: params.ns, limit: params.limit, key: body.key }, body.cost);
    reply.header('ratelimit-limit', String(decision.limit));
    reply.header('ratelimit-remaining', String(decision.remaining));
    reply.header('ratelimit-reset', wholeSeconds(decision.resetMs));
    if (!decision.allow) reply.header('retry-after', wholeSeconds(Math.max(decision.retryAfterMs, 1)));
    return decision;
  }
}
