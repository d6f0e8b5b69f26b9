import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class AdmitRequestDto {
  /** What the call costs against a rate limit (1 by default). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  @JSONSchema({ description: 'What the call costs against the rate limit; at most its burst.', default: 1 })
  cost?: number;
}
