import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import type { ReportResponse } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { ReportRequestDto } from './reports.dto';
import { ReportsService } from './reports.service';

@Controller('v1/:ns/reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  @Post()
  @HttpCode(200)
  record(@Param() params: NamespaceParams, @Body() body: ReportRequestDto): Promise<ReportResponse> {
    return this.reports.record(params.ns, body);
  }
}
