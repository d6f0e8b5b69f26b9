import { IsOptional, IsString, MaxLength } from 'class-validator';

/** `?reason=`: why the change is made, kept in the audit log. */
export class PolicyChangeQuery {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
