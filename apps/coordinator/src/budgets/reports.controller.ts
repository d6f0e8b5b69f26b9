import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { ReportResponse } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { ClientRoute } from '../http/routes';
import { tooManyDependencies } from '../openapi/route-docs';
import { TAGS } from '../openapi/tags';
import { ReportRequestDto } from './reports.dto';
import { ReportsService } from './reports.service';
import { ServedDirectly } from '../http/direct-routes';

@ApiTags(TAGS.dependencies.name)
@Controller('v1/:ns/reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  @Post()
  @HttpCode(200)
  @ServedDirectly()
  @ClientRoute({
    serialized: true,
    operationId: 'reportOutcomes',
    summary: 'Report batched call outcomes',
    description:
      'What a reporter (one client instance) saw since its last report, per dependency: `requests` counts first ' +
      'attempts (the retry budget\u2019s deposits); `successes`, `failures` and `slow` count the outcomes of all ' +
      'attempts (`slow` at most `successes` + `failures`); `latency` is an optional histogram (`counts` has one ' +
      'more entry than the strictly increasing `boundsMs`, for the overflow); `probes` carries the outcome of ' +
      'each half-open probe admitted with a `probe.token` (POST …/admit), which is what closes or reopens the ' +
      'breaker. Entries for the same dependency in one batch are added together. The answer gives each ' +
      'dependency\u2019s breaker state after the report.',
    responses: [
      { status: 200, description: 'The breaker state of each reported dependency.', schema: 'ReportResponse' },
    ],
    errors: [tooManyDependencies('deps.{i}.dep')],
  })
  record(@Param() params: NamespaceParams, @Body() body: ReportRequestDto): Promise<ReportResponse> {
    return this.reports.record(params.ns, body);
  }
}
