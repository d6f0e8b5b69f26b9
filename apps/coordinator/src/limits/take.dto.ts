import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class TakeRequestDto {
  /** Whose allowance this is: a user, a tenant, an IP address. */
  @Matches(/^[A-Za-z0-9._:@-]{1,200}$/, { message: 'must be 1-200 of A-Z a-z 0-9 . _ : @ -' })
  @JSONSchema({ description: 'Whose allowance this is: a user, a tenant, an IP address.' })
  key!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  @JSONSchema({ description: 'What this take costs; at most the limit\u2019s burst.', default: 1 })
  cost?: number;
}
