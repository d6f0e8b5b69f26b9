import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { PublicRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { MetricsService } from './metrics.service';

@ApiTags(TAGS.operations.name)
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('cache-control', 'no-store')
  @PublicRoute({
    operationId: 'scrapeMetrics',
    summary: 'Prometheus metrics',
    description:
      'This instance\u2019s metrics in the Prometheus text format (0.0.4): decisions, breaker states, budgets, ' +
      'store latency and errors, HTTP request durations, process metrics.',
    responses: [
      {
        status: 200,
        description: 'The metrics.',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    ],
  })
  async scrape(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    reply.header('content-type', this.metrics.registry.contentType);
    return this.metrics.registry.metrics();
  }
}
