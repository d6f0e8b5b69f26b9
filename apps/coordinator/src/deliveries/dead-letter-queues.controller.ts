import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { QueueList } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { AdminRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { DeadLettersService } from './dead-letters.service';
import { QueuePageQuery } from './deliveries.dto';

@ApiTags(TAGS.deadLettersAdmin.name)
@Controller('admin/v1/:ns/queues')
export class DeadLetterQueuesController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Get()
  @AdminRoute({
    operationId: 'listDeadLetterQueues',
    summary: 'List the queues that hold dead letters',
    description:
      'The namespace\u2019s queues that hold dead letters, by name, each with how many and when it last parked ' +
      'one, a page at a time: pass the answer\u2019s `next` as `cursor` for the next page. A queue is listed ' +
      'from its first parked message for as long as dead letters are kept (14 days after its latest), at most ' +
      '10,000 per namespace (the least recently parking go first); one emptied since is left out of its page.',
    responses: [{ status: 200, description: 'A page of queues.', schema: 'QueueList' }],
  })
  list(@Param() params: NamespaceParams, @Query() query: QueuePageQuery): Promise<QueueList> {
    return this.deadLetters.queues(params.ns, query);
  }
}
