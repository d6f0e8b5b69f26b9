import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { IsOptional, Matches } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { DEPENDENCY_LIST_PATTERN, MAX_EVENT_DEPENDENCIES } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { ClientRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { EventStreamService } from './event-stream.service';

export class EventsQuery {
  /** Comma-separated dependencies; absent: every dependency of the namespace. */
  @IsOptional()
  @Matches(DEPENDENCY_LIST_PATTERN, {
    message: `must be 1 to ${MAX_EVENT_DEPENDENCIES} comma-separated dependency names`,
  })
  @JSONSchema({
    description:
      `Up to ${MAX_EVENT_DEPENDENCIES} comma-separated dependencies to follow; absent: every dependency of the ` +
      'namespace, including those that appear later.',
  })
  deps?: string;
}

const EXAMPLE_STREAM =
  'event: breaker\ndata: {"dep":"payments-api","state":"closed","since":1767225600000,"openUntil":null}\n\n' +
  ': keep-alive\n\n' +
  'event: breaker\ndata: {"dep":"payments-api","state":"open","since":1767225612000,"openUntil":1767225642000}\n\n' +
  'event: policy\ndata: {"dep":"payments-api"}\n\n';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/events')
export class EventsController {
  constructor(private readonly streams: EventStreamService) {}

  @Get()
  @ClientRoute({
    operationId: 'streamEvents',
    summary: 'Follow breaker transitions and policy changes (Server-Sent Events)',
    description:
      'On connect, one `breaker` event per followed dependency (its current state), then one per transition ' +
      'as any instance makes it: `event: breaker`, `data` a `BreakerEvent`. A changed policy document sends ' +
      '`event: policy`, `data` a `PolicyEvent` (`dep` null for the namespace default). A comment line ' +
      '(`: keep-alive`) comes at least every 15 s. The stream ends when the service shuts down: reconnect. ' +
      'The stream starts before the store is asked anything: a store failure ends it rather than answering 503.',
    responses: [
      {
        status: 200,
        description: 'The event stream (`Cache-Control: no-cache`).',
        content: { 'text/event-stream': { schema: { type: 'string' }, example: EXAMPLE_STREAM } },
      },
    ],
    store: false,
  })
  async stream(
    @Param() params: NamespaceParams,
    @Query() query: EventsQuery,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    reply.hijack();
    if (reply.request.method === 'HEAD') return this.streams.head(reply.raw);
    await this.streams.stream(
      { namespace: params.ns, dependencies: query.deps?.split(',') },
      reply.raw,
      reply.request.log,
    );
  }
}
