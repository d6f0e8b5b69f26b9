import { IsOptional, IsString, MaxLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

/** `?reason=`: why the change is made, kept in the audit log. */
export class PolicyChangeQuery {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  @JSONSchema({ description: 'Why the change is made, kept in the audit log.' })
  reason?: string;
}
