import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { NamespaceList } from '@sluice/protocol';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { AdminRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { NamespacesAdminService } from './namespaces-admin.service';

@ApiTags(TAGS.breakersAdmin.name)
@Controller('admin/v1/namespaces')
export class NamespacesAdminController {
  constructor(private readonly namespaces: NamespacesAdminService) {}

  @Get()
  @AdminRoute({
    operationId: 'listNamespaces',
    summary: 'List the namespaces',
    description:
      'Every namespace that holds state or policies (one unused for a day is forgotten), by name, with how many ' +
      'dependencies it holds. A token sees the namespaces it covers only.',
    responses: [{ status: 200, description: 'The namespaces.', schema: 'NamespaceList' }],
  })
  async list(@Actor() actor: Principal): Promise<NamespaceList> {
    return { items: await this.namespaces.list(actor) };
  }
}
