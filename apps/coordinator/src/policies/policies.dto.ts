import { IsOptional, IsString, MaxLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { MAX_REASON_LENGTH } from '@sluice/protocol';

/** `?reason=`: why the change is made, kept in the audit log. */
export class PolicyChangeQuery {
  @IsOptional()
  @IsString()
  @MaxLength(MAX_REASON_LENGTH)
  @JSONSchema({ description: 'Why the change is made, kept in the audit log.' })
  reason?: string;
}
