import { Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import type { DeadLetter, DeadLetterPage } from '@sluice/protocol';
import { AdminOnly } from '../auth/access.decorators';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { DeadLettersService } from './dead-letters.service';
import { QueueParams } from '../common/params.dto';
import { DeadLetterPageQuery, DeadLetterParams } from './deliveries.dto';

@AdminOnly()
@Controller('admin/v1/:ns/queues/:queue/dead-letters')
export class DeadLettersController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Get()
  list(@Param() params: QueueParams, @Query() query: DeadLetterPageQuery): Promise<DeadLetterPage> {
    return this.deadLetters.list({ namespace: params.ns, queue: params.queue }, query);
  }

  @Post(':id/redrive')
  @HttpCode(200)
  redrive(@Param() params: DeadLetterParams, @Actor() actor: Principal): Promise<DeadLetter> {
    return this.deadLetters.redrive({ namespace: params.ns, queue: params.queue }, params.id, actor);
  }

  @Delete(':id')
  @HttpCode(204)
  purge(@Param() params: DeadLetterParams, @Actor() actor: Principal): Promise<void> {
    return this.deadLetters.purge({ namespace: params.ns, queue: params.queue }, params.id, actor);
  }
}
