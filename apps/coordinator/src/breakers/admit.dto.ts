import { IsInt, IsOptional, Max, Min } from 'class-validator';

export class AdmitRequestDto {
  /** What the call costs against a rate limit (1 by default). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  cost?: number;
}
