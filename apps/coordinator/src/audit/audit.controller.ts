import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { Type } from 'class-transformer';
import { JSONSchema } from 'class-validator-jsonschema';
import { RESOURCE_NAME_PATTERN, type AuditLog } from '@sluice/protocol';
import { AUDIT_ENTRIES_KEPT } from '@sluice/store';
import { Actor } from '../auth/actor.decorator';
import type { Principal } from '../auth/token-registry';
import { AdminRoute } from '../http/routes';
import { TAGS } from '../openapi/tags';
import { AuditService } from './audit.service';

export class AuditQuery {
  @IsOptional()
  @Matches(RESOURCE_NAME_PATTERN, { message: `must match ${RESOURCE_NAME_PATTERN.source}` })
  @JSONSchema({ description: 'Only this namespace\u2019s entries; absent: every namespace.' })
  ns?: string;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  @JSONSchema({ description: 'How many of the latest entries.', default: 100 })
  limit?: number;
}

@ApiTags(TAGS.audit.name)
@Controller('admin/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  /** The latest entries, oldest first. */
  @Get()
  @AdminRoute({
    operationId: 'readAuditLog',
    summary: 'Read the audit log',
    description:
      'The latest breaker actions, policy changes and dead-letter redrives and purges, oldest first (about ' +
      `the last ${AUDIT_ENTRIES_KEPT} are kept). With \`ns\`, the token\u2019s namespaces must include it; ` +
      'without it, the token must cover every namespace (`*`), else 403.',
    responses: [{ status: 200, description: 'The entries.', schema: 'AuditLog' }],
  })
  async read(@Query() query: AuditQuery, @Actor() actor: Principal): Promise<AuditLog> {
    return { items: await this.audit.readAs(actor, { namespace: query.ns, limit: query.limit ?? 100 }) };
  }
}
