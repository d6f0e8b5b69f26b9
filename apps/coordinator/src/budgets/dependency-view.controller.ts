import { Controller, Get, Headers, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { DependencyView } from '@sluice/protocol';
import { etagOf, matchesIfNoneMatch } from '../common/etag';
import { DependencyParams } from '../common/params.dto';
import { DependencyViewService } from './dependency-view.service';

@Controller('v1/:ns/deps/:dep')
export class DependencyViewController {
  constructor(private readonly views: DependencyViewService) {}

  @Get()
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
