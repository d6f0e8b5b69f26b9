import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { MAX_RETRY_ASKS, type RetryBatchDecision } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { DecisionRoute } from '../http/routes';
import { tooManyDependencies } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { RetryBatchRequestDto } from './retries.dto';
import { RetryBatchService } from './retry-batch.service';
import { ServedDirectly } from '../http/direct-routes';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/retries')
export class RetriesController {
  constructor(private readonly batches: RetryBatchService) {}

  @Post()
  @HttpCode(200)
  @ServedDirectly()
  @DecisionRoute({
    serialized: true,
    operationId: 'decideRetries',
    summary: 'Many retry decisions in one request',
    description:
      `1 to ${MAX_RETRY_ASKS} asks, each with the fields of POST …/deps/{dep}/retry plus \`dep\`: how an SDK asks ` +
      'when several calls of one process fail at once. The answer is exactly what the same asks sent one by one in ' +
      'that order would get, one decision per ask in order; the asks for one dependency are decided in one store ' +
      'call. An invalid ask rejects the whole request (400 naming `asks.N.field`) and nothing is decided.',
    responses: [{ status: 200, description: 'One decision per ask, in order.', schema: 'RetryBatchDecision' }],
    errors: [tooManyDependencies('asks.{i}.dep')],
  })
  decide(@Param() params: NamespaceParams, @Body() body: RetryBatchRequestDto): Promise<RetryBatchDecision> {
    return this.batches.decide(params.ns, body.asks);
  }
}
