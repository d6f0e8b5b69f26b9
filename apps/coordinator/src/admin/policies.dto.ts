import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';

const NAME_MESSAGE = `must match ${RESOURCE_NAME_PATTERN.source}`;

export class LimitParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  limit!: string;
}

export class QueueParams extends NamespaceParams {
  @Matches(RESOURCE_NAME_PATTERN, { message: NAME_MESSAGE })
  queue!: string;
}

/** `?reason=`: why the change is made, kept in the audit log. */
export class PolicyChangeQuery {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}
