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
import {
  RESOURCE_NAME_PATTERN,
  type DependencyReport,
  type LatencyHistogram,
  type ProbeOutcome,
  type ReportRequest,
} from '@sluice/protocol';

const MAX_COUNT = 1_000_000_000;
export const MAX_REPORT_ENTRIES = 100;
export const MAX_HISTOGRAM_BOUNDS = 64;

export class LatencyHistogramDto implements LatencyHistogram {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_HISTOGRAM_BOUNDS)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(3_600_000, { each: true })
  boundsMs!: number[];

  @IsArray()
  @ArrayMinSize(2)
  @ArrayMaxSize(MAX_HISTOGRAM_BOUNDS + 1)
  @IsInt({ each: true })
  @Min(0, { each: true })
  @Max(MAX_COUNT, { each: true })
  counts!: number[];
}

export class ProbeOutcomeDto implements ProbeOutcome {
  @IsString()
  @MaxLength(128)
  token!: string;

  @IsBoolean()
  success!: boolean;
}

export class DependencyReportDto implements DependencyReport {
  @Matches(RESOURCE_NAME_PATTERN, { message: `must match ${RESOURCE_NAME_PATTERN.source}` })
  dep!: string;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  requests!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  successes!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  failures!: number;

  @IsInt()
  @Min(0)
  @Max(MAX_COUNT)
  slow!: number;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => LatencyHistogramDto)
  latency?: LatencyHistogramDto;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => ProbeOutcomeDto)
  probes?: ProbeOutcomeDto[];
}

export class ReportRequestDto implements ReportRequest {
  @IsString()
  @Matches(/^[A-Za-z0-9._:-]{1,128}$/, { message: 'must be 1-128 of A-Z a-z 0-9 . _ : -' })
  reporter!: string;

  @IsArray()
  @ArrayMaxSize(MAX_REPORT_ENTRIES)
  @ValidateNested({ each: true })
  @Type(() => DependencyReportDto)
  deps!: DependencyReportDto[];
}
