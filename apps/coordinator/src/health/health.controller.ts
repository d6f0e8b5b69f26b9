import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Health, Readiness } from '@sluice/protocol';
import type { Store } from '@sluice/store';
import { PublicRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { STORE } from '../store/store.provider';

@ApiTags(TAGS.operations.name)
@Controller('health')
export class HealthController {
  constructor(@Inject(STORE) private readonly store: Store) {}

  /** The process is up. */
  @Get('live')
  @HttpCode(200)
  @PublicRoute({
    operationId: 'live',
    summary: 'Liveness probe',
    description: 'The process is up. It does not touch the store.',
    responses: [{ status: 200, description: 'Up.', schema: 'Health' }],
  })
  live(): Health {
    return { status: 'ok' };
  }

  /** The store answers; 503 while it does not. */
  @Get('ready')
  @PublicRoute({
    operationId: 'ready',
    summary: 'Readiness probe',
    description: 'The store answers a ping.',
    responses: [
      { status: 200, description: 'Ready.', schema: 'Readiness' },
      { status: 503, description: 'The store does not answer (`status: unavailable`).', schema: 'Readiness' },
    ],
  })
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<Readiness> {
    try {
      await this.store.ping();
      return { status: 'ok', store: this.store.kind };
    } catch {
      reply.status(503);
      return { status: 'unavailable', store: this.store.kind };
    }
  }
}
