import { Controller, Get, Param } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { DependencyHistory } from '@sluice/protocol';
import { DependencyParams } from '../common/params.dto';
import { ClientRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { DependencyHistoryService } from './dependency-history.service';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/deps/:dep/history')
export class DependencyHistoryController {
  constructor(private readonly history: DependencyHistoryService) {}

  @Get()
  @ClientRoute({
    operationId: 'readDependencyHistory',
    summary: 'Read a dependency\u2019s last 15 minutes',
    description:
      'One point per 10 s step that had reports, oldest first, for the last 15 minutes: the calls reported ' +
      'within the step and their failure and slow rates, the budget as the step\u2019s last report left it, and ' +
      'the breaker\u2019s state after that report. A step without reports has no point. Kept in the store, so ' +
      'every instance answers the same; a dependency never reported has no points.',
    responses: [{ status: 200, description: 'The dependency\u2019s history.', schema: 'DependencyHistory' }],
  })
  read(@Param() params: DependencyParams): Promise<DependencyHistory> {
    return this.history.read({ namespace: params.ns, dependency: params.dep });
  }
}
