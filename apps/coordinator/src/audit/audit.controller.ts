import { Controller, Get, Query } from '@nestjs/common';
import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { Type } from 'class-transformer';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import type { AuditEntry } from '@sluice/store';
import { AdminOnly } from '../auth/access.decorators';
import { AuditService } from './audit.service';

export class AuditQuery {
  @IsOptional()
  @Matches(RESOURCE_NAME_PATTERN, { message: `must match ${RESOURCE_NAME_PATTERN.source}` })
  ns?: string;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;
}

@AdminOnly()
@Controller('admin/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  /** The latest entries, oldest first. */
  @Get()
  async read(@Query() query: AuditQuery): Promise<{ items: AuditEntry[] }> {
    return { items: await this.audit.read({ namespace: query.ns, limit: query.limit ?? 100 }) };
  }
}
