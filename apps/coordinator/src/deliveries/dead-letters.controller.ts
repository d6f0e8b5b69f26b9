import { Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { DeadLetter, DeadLetterPage } from '@sluice/protocol';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { AdminRoute } from '../http/routes';
import { notFound } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { DeadLettersService } from './dead-letters.service';
import { QueueParams } from '../common/params.dto';
import { DeadLetterPageQuery, DeadLetterParams } from './deliveries.dto';

const NO_SUCH_DEAD_LETTER = notFound('The queue has no dead letter with this id.');

@ApiTags(TAGS.deadLettersAdmin.name)
@Controller('admin/v1/:ns/queues/:queue/dead-letters')
export class DeadLettersController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Get()
  @AdminRoute({
    operationId: 'listDeadLetters',
    summary: 'List a queue\u2019s dead letters',
    description: 'Oldest first, a page at a time: pass the answer\u2019s `next` as `cursor` for the next page.',
    responses: [{ status: 200, description: 'A page of dead letters.', schema: 'DeadLetterPage' }],
  })
  list(@Param() params: QueueParams, @Query() query: DeadLetterPageQuery): Promise<DeadLetterPage> {
    return this.deadLetters.list({ namespace: params.ns, queue: params.queue }, query);
  }

  @Post(':id/redrive')
  @HttpCode(200)
  @AdminRoute({
    operationId: 'redriveDeadLetter',
    summary: 'Redrive a dead letter',
    description:
      'Hands the entry back for delivery again: it leaves the dead-letter store, its attempt count restarts, and ' +
      'the answer carries its payload for the caller to re-enqueue. Audited.',
    responses: [{ status: 200, description: 'The entry, now removed.', schema: 'DeadLetter' }],
    errors: [NO_SUCH_DEAD_LETTER],
  })
  redrive(@Param() params: DeadLetterParams, @Actor() actor: Principal): Promise<DeadLetter> {
    return this.deadLetters.redrive({ namespace: params.ns, queue: params.queue }, params.id, actor);
  }

  @Delete(':id')
  @HttpCode(204)
  @AdminRoute({
    operationId: 'purgeDeadLetter',
    summary: 'Purge a dead letter',
    description: 'Deletes the entry for good. Audited.',
    responses: [{ status: 204, description: 'Purged.' }],
    errors: [NO_SUCH_DEAD_LETTER],
  })
  purge(@Param() params: DeadLetterParams, @Actor() actor: Principal): Promise<void> {
    return this.deadLetters.purge({ namespace: params.ns, queue: params.queue }, params.id, actor);
  }
}
