import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { IsOptional, Matches } from 'class-validator';
import { NamespaceParams } from '../common/params.dto';
import { EventStreamService } from './event-stream.service';

const DEPENDENCY_LIST = /^[a-z0-9][a-z0-9._-]{0,127}(,[a-z0-9][a-z0-9._-]{0,127}){0,99}$/;

export class EventsQuery {
  /** Comma-separated dependencies; absent: every dependency of the namespace. */
  @IsOptional()
  @Matches(DEPENDENCY_LIST, { message: 'must be 1 to 100 comma-separated dependency names' })
  deps?: string;
}

@Controller('v1/:ns/events')
export class EventsController {
  constructor(private readonly streams: EventStreamService) {}

  @Get()
  async stream(
    @Param() params: NamespaceParams,
    @Query() query: EventsQuery,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    reply.hijack();
    await this.streams.stream({ namespace: params.ns, dependencies: query.deps?.split(',') }, reply.raw);
  }
}
