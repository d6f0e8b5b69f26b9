import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import {
  MAX_FORCED_SECONDS,
  MAX_REASON_LENGTH,
  type ForceBreakerRequest,
  type ResetBreakerRequest,
} from '@sluice/protocol';

/** A trip or force-close: the reason is required, the duration optional (until reset). */
export class ForceBreakerDto implements ForceBreakerRequest {
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_REASON_LENGTH)
  @JSONSchema({ description: 'Why, for the audit log and the breaker list.' })
  reason!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_FORCED_SECONDS)
  @JSONSchema({ description: 'How long the forced state lasts; absent: until reset.' })
  durationSeconds?: number;
}

export class ResetBreakerDto implements ResetBreakerRequest {
  @IsOptional()
  @IsString()
  @MaxLength(MAX_REASON_LENGTH)
  @JSONSchema({ description: 'Why, for the audit log.' })
  reason?: string;
}
