import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { MAX_POLICY_PAGE, MAX_REASON_LENGTH, POLICY_TARGET_PATTERN } from '@sluice/protocol';

/** `?reason=`: why the change is made, kept in the audit log. */
export class PolicyChangeQuery {
  @IsOptional()
  @IsString()
  @MaxLength(MAX_REASON_LENGTH)
  @JSONSchema({ description: 'Why the change is made, kept in the audit log.' })
  reason?: string;
}

/** `?limit=&cursor=` of the list of a namespace's policy documents. */
export class PolicyPageQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_POLICY_PAGE)
  @JSONSchema({ description: 'Page size.', default: 100 })
  limit?: number;

  @IsOptional()
  @Matches(POLICY_TARGET_PATTERN, { message: 'must be the next cursor of a previous page' })
  @JSONSchema({ description: 'The `next` of the previous page; absent: the first page.' })
  cursor?: string;
}
