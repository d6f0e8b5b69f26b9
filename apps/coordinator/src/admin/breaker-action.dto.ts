import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

const THIRTY_DAYS = 30 * 24 * 60 * 60;

/** A trip or force-close: the reason is required, the duration optional (until reset). */
export class ForceBreakerDto {
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  @JSONSchema({ description: 'Why, for the audit log and the breaker list.' })
  reason!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(THIRTY_DAYS)
  @JSONSchema({ description: 'How long the forced state lasts; absent: until reset.' })
  durationSeconds?: number;
}

export class ResetBreakerDto {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  @JSONSchema({ description: 'Why, for the audit log.' })
  reason?: string;
}
