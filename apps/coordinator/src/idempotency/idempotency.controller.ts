import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { IdempotencyClaimResponse, IdempotencyKeyView } from '@sluice/protocol';
import { ClaimRequestDto, CompleteRequestDto, IdempotencyParams, ReleaseQueryDto } from './idempotency.dto';
import { IdempotencyService } from './idempotency.service';

const refOf = (params: IdempotencyParams) => ({ namespace: params.ns, key: params.key });

@Controller('v1/:ns/idempotency/:key')
export class IdempotencyController {
  constructor(private readonly idempotency: IdempotencyService) {}

  /** 201 claimed, 200 completed (the stored response), 409 in flight, 422 another fingerprint. */
  @Post('claim')
  async claim(
    @Param() params: IdempotencyParams,
    @Body() body: ClaimRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<IdempotencyClaimResponse> {
    const answer = await this.idempotency.claim(refOf(params), body);
    reply.status(answer.status);
    return answer.body;
  }

  @Put()
  @HttpCode(204)
  complete(@Param() params: IdempotencyParams, @Body() body: CompleteRequestDto): Promise<void> {
    return this.idempotency.complete(refOf(params), body);
  }

  @Delete()
  @HttpCode(204)
  release(@Param() params: IdempotencyParams, @Query() query: ReleaseQueryDto): Promise<void> {
    return this.idempotency.release(refOf(params), query.token);
  }

  @Get()
  read(@Param() params: IdempotencyParams): Promise<IdempotencyKeyView> {
    return this.idempotency.read(refOf(params));
  }
}
