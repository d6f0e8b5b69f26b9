import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  DURABLE_HEADER,
  MAX_STORED_RESPONSE_BYTES,
  type IdempotencyClaimResponse,
  type IdempotencyKeyView,
} from '@sluice/protocol';
import { ClientRoute } from '../http/routes';
import { ERRORS, notFound, RETRY_AFTER, sizeOf, type ErrorDoc } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { ClaimRequestDto, CompleteRequestDto, IdempotencyParams, ReleaseQueryDto } from './idempotency.dto';
import { IdempotencyService } from './idempotency.service';

const refOf = (params: IdempotencyParams) => ({ namespace: params.ns, key: params.key });

const LEASE_LOST: ErrorDoc = {
  status: 409,
  code: 'lease_lost',
  description:
    'The token does not hold the key: its lease expired and another request took the key over, or the key was ' +
    'completed or released. `details` names `token`.',
};

@ApiTags(TAGS.idempotency.name)
@Controller('v1/:ns/idempotency/:key')
export class IdempotencyController {
  constructor(private readonly idempotency: IdempotencyService) {}

  /** 201 claimed, 200 completed (the stored response), 409 in flight, 422 another fingerprint. */
  @Post('claim')
  @ClientRoute({
    operationId: 'claimIdempotencyKey',
    summary: 'Claim an idempotency key',
    description:
      'Before doing the work of a request that carries an idempotency key. The first claim holds the key for ' +
      '`leaseMs` and gets a fencing `token`; the work\u2019s response is then stored with PUT (or the claim ' +
      'released with DELETE). A claim of a completed key gets the stored response to replay. A claim whose ' +
      'holder\u2019s lease expired takes the key over (`recovered: true`). The key is kept `retentionSeconds` ' +
      '(the namespace\u2019s idempotency retention by default, at most its maximum).',
    responses: [
      { status: 201, description: 'Claimed: do the work, then PUT its response.', schema: 'IdempotencyClaimed' },
      { status: 200, description: 'Completed earlier: replay this response.', schema: 'IdempotencyCompleted' },
    ],
    errors: [
      {
        status: 409,
        code: 'in_flight',
        description: 'Another request holds the key and has not finished: claim again after `Retry-After`.',
        headers: RETRY_AFTER,
        schema: 'InFlightBody',
      },
      ERRORS.tooManyNamespaces,
      {
        status: 422,
        code: 'fingerprint_mismatch',
        description: 'The key was first claimed with another `fingerprint`: a different request reused it.',
      },
      {
        ...ERRORS.validationFailed,
        description: '`retentionSeconds` over the namespace\u2019s maximum retention.',
      },
    ],
  })
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
  @ClientRoute({
    operationId: 'completeIdempotencyKey',
    summary: 'Store the response of a claimed key',
    description:
      'Completes the claim: the response is kept, byte for byte, until the key expires, and replayed to every ' +
      'later claim. The `sluice-durable` header says whether a replica of the store holds it too; when the ' +
      'store waits for a replica on this key (the claim said `durable: true`) and none acknowledged in time, ' +
      'the answer is 503 `store_unavailable` and a PUT again with the same token waits again.',
    responses: [{ status: 204, description: 'Stored.' }],
    errors: [
      LEASE_LOST,
      {
        ...ERRORS.bodyTooLarge,
        description: `The stored response (body plus header names and values) is over ${sizeOf(MAX_STORED_RESPONSE_BYTES)}.`,
      },
      {
        ...ERRORS.validationFailed,
        description:
          'A header name or value that is not valid HTTP (`response.headers.{name}`), more than 100 headers, or ' +
          '`body` not canonical base64 with `bodyEncoding: base64`.',
      },
    ],
  })
  async complete(
    @Param() params: IdempotencyParams,
    @Body() body: CompleteRequestDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    const { durable } = await this.idempotency.complete(refOf(params), body);
    reply.header(DURABLE_HEADER, String(durable));
  }

  @Delete()
  @HttpCode(204)
  @ClientRoute({
    operationId: 'releaseIdempotencyKey',
    summary: 'Release a claim whose work did not happen',
    description: 'The key becomes new again: the next claim does the work.',
    responses: [{ status: 204, description: 'Released.' }],
    errors: [LEASE_LOST],
  })
  release(@Param() params: IdempotencyParams, @Query() query: ReleaseQueryDto): Promise<void> {
    return this.idempotency.release(refOf(params), query.token);
  }

  @Get()
  @ClientRoute({
    operationId: 'readIdempotencyKey',
    summary: 'Read an idempotency key\u2019s state',
    responses: [{ status: 200, description: 'The key\u2019s state.', schema: 'IdempotencyKeyView' }],
    errors: [notFound('The key was never claimed, was released, or has expired.')],
  })
  read(@Param() params: IdempotencyParams): Promise<IdempotencyKeyView> {
    return this.idempotency.read(refOf(params));
  }
}
