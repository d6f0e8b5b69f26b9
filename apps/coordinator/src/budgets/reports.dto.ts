import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import {
  MAX_HISTOGRAM_BOUND_MS,
  MAX_HISTOGRAM_BOUNDS,
  MAX_REPORT_ENTRIES,
  MAX_REPORT_PROBES,
  REQUEST_ID_PATTERN,
  RESOURCE_NAME_PATTERN,
  type DependencyReport,
  type LatencyHistogram,
  type ProbeOutcome,
  type ReportRequest,
} from '@sluice/protocol';
import { CheckedBySchema } from '../http/validation/pipe';

const MAX_COUNT = 1_000_000_000;

export class LatencyHistogramDto implements LatencyHistogram {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_HISTOGRAM_BOUNDS)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(MAX_HISTOGRAM_BOUND_MS, { each: true })
  @JSONSchema({ description: 'Upper bounds of the buckets, ms, strictly increasing.' })
  boundsMs!: number[];

  @IsArray()
  @ArrayMinSize(2)
  @ArrayMaxSize(MAX_HISTOGRAM_BOUNDS + 1)
  @IsInt({ each: true })
  @Min(0, { each: true })
  @Max(MAX_COUNT, { each: true })
  @JSONSchema({ description: 'Samples per bucket: one more entry than `boundsMs`, the last for the overflow.' })
  counts!: number[];
}

export class ProbeOutcomeDto implements ProbeOutcome {
  @IsString()
  @MaxLength(128)
  @JSONSchema({ description: 'The `probe.token` POST …/admit handed out.' })
  token!: string;

  @IsBoolean()
  @JSONSchema({ description: 'Whether the probe call succeeded.' })
  success!: boolean;
}

export class DependencyReportDto implements DependencyReport {
  @Matches(RESOURCE_NAME_PATTERN, { message: `must match ${RESOURCE_NAME_PATTERN.source}` })
  dep!: string;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({ description: 'First attempts made (the retry budget\u2019s deposits).' })
  requests!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({ description: 'Attempts (first ones and retries) that succeeded.' })
  successes!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({ description: 'Attempts that failed.' })
  failures!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({ description: 'Attempts slower than the policy\u2019s `slowCallMs` (at most successes + failures).' })
  slow!: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({
    description:
      'Retries made without the coordinator\u2019s grant (the client\u2019s local fallback decided) since the last ' +
      'report; charged to the retry budget.',
  })
  retries?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  @JSONSchema({
    description:
      'Retries granted to this reporter (by the coordinator or its local fallback) whose attempt succeeded, ' +
      'since the last report: an adaptive budget gives each one\u2019s grant back.',
  })
  retriesSucceeded?: number;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => LatencyHistogramDto)
  @JSONSchema({ description: 'Latency of the attempts, as a histogram.' })
  latency?: LatencyHistogramDto;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_REPORT_PROBES)
  @ValidateNested({ each: true })
  @Type(() => ProbeOutcomeDto)
  @JSONSchema({ description: 'The outcome of each half-open probe this reporter made.' })
  probes?: ProbeOutcomeDto[];
}

@CheckedBySchema()
export class ReportRequestDto implements ReportRequest {
  @IsString()
  @Matches(REQUEST_ID_PATTERN, { message: 'must be 1-128 of A-Z a-z 0-9 . _ : -' })
  @JSONSchema({
    description: 'Who reports: one client instance (e.g. a pod name). Breakers count distinct reporters.',
  })
  reporter!: string;

  @IsArray()
  @ArrayMaxSize(MAX_REPORT_ENTRIES)
  @ValidateNested({ each: true })
  @Type(() => DependencyReportDto)
  deps!: DependencyReportDto[];
}
