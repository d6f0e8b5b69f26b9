import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Store } from '@sluice/store';
import { Public } from '../auth/access.decorators';
import { STORE } from '../store/store.provider';

@Public()
@Controller('health')
export class HealthController {
  constructor(@Inject(STORE) private readonly store: Store) {}

  /** The process is up. */
  @Get('live')
  @HttpCode(200)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** The store answers; 503 while it does not. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<{ status: string; store: string }> {
    try {
      await this.store.ping();
      return { status: 'ok', store: this.store.kind };
    } catch {
      reply.status(503);
      return { status: 'unavailable', store: this.store.kind };
    }
  }
}
