import { Controller, Get, Headers, Param, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { DependencyView } from '@sluice/protocol';
import { etagOf, matchesIfNoneMatch } from '../common/etag';
import { DependencyParams } from '../common/params.dto';
import { ClientRoute } from '../http/routes';
import { ETAG } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { DependencyViewService } from './dependency-view.service';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/deps/:dep')
export class DependencyViewController {
  constructor(private readonly views: DependencyViewService) {}

  @Get()
  @ClientRoute({
    operationId: 'readDependency',
    summary: 'Read a dependency\u2019s state and policy',
    description:
      'Breaker, retry budget, fleet latency and the policy in effect. A dependency never seen reads as empty, ' +
      'under the default policy. Poll with `If-None-Match` to get 304 while nothing changed.',
    headers: [
      {
        name: 'If-None-Match',
        description: 'The `ETag` of an earlier answer (or `*`): 304 without a body while it still matches.',
      },
    ],
    responses: [
      { status: 200, description: 'The dependency\u2019s state.', schema: 'DependencyView', headers: ETAG },
      { status: 304, description: 'Not modified: `If-None-Match` matches the current state.', headers: ETAG },
    ],
  })
  async read(
    @Param() params: DependencyParams,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DependencyView | undefined> {
    const view = await this.views.read({ namespace: params.ns, dependency: params.dep });
    const etag = etagOf(view);
    reply.header('etag', etag);
    if (matchesIfNoneMatch(ifNoneMatch, etag)) {
      reply.status(304);
      return undefined;
    }
    return view;
  }
}
