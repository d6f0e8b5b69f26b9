import { IsBoolean, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import type { FailureKind, RetryRequest } from '@sluice/protocol';

export class RetryRequestDto implements RetryRequest {
  /** Which retry this is: 1 is the first retry. */
  @IsInt()
  @Min(1)
  @Max(100)
  attempt!: number;

  @IsOptional()
  @IsBoolean()
  idempotent?: boolean;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  deadlineMs?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(599)
  status?: number;

  @IsOptional()
  @IsIn(['timeout', 'connection', 'other'])
  error?: FailureKind;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  retryAfterMs?: number;
}
