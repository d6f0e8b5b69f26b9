import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

const THIRTY_DAYS = 30 * 24 * 60 * 60;

/** A trip or force-close: the reason is required, the duration optional (until reset). */
export class ForceBreakerDto {
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  reason!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(THIRTY_DAYS)
  durationSeconds?: number;
}

export class ResetBreakerDto {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
