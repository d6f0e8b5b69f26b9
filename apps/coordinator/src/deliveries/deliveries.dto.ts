import 'reflect-metadata';
import { Type } from 'class-transformer';
import { Allow, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import {
  IDEMPOTENCY_KEY_PATTERN,
  MAX_DEAD_LETTER_PAGE,
  RESOURCE_NAME_PATTERN,
  MAX_DELIVERY_ATTEMPT,
  MAX_DELIVERY_ERROR_LENGTH,
  MAX_PAYLOAD_BYTES,
  type DeliveryAckRequest,
  type DeliveryAttemptRequest,
} from '@sluice/protocol';
import { QueueParams } from '../common/params.dto';

const MESSAGE_ID_MESSAGE = `must match ${IDEMPOTENCY_KEY_PATTERN.source}`;

/** A dead letter's id is its message id. */
export class DeadLetterParams extends QueueParams {
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  @JSONSchema({ description: 'The dead letter\u2019s id: its message id.' })
  id!: string;
}

export class DeliveryAttemptDto implements DeliveryAttemptRequest {
  @IsString()
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  @JSONSchema({ description: 'The message, as the queue identifies it.' })
  messageId!: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX_DELIVERY_ERROR_LENGTH)
  @JSONSchema({ description: 'Why this attempt failed; kept with the dead letter.' })
  error?: string;

  @Allow()
  @IsOptional()
  @JSONSchema({
    description: `The message (any JSON value, at most ${MAX_PAYLOAD_BYTES / 1024} KiB as JSON), kept with the dead letter.`,
    nullable: true,
  })
  payload?: unknown;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_DELIVERY_ATTEMPT)
  @JSONSchema({
    description:
      'The delivery this failure is for (a broker\u2019s delivery count, 1 = the first). The count becomes the ' +
      'larger of the count and `attempt`; recording an attempt already counted (after a timeout or a 503) ' +
      'changes nothing and answers the same. Absent: the count goes up by one.',
  })
  attempt?: number;
}

export class DeliveryAckDto implements DeliveryAckRequest {
  @IsString()
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  @JSONSchema({ description: 'The message handled.' })
  messageId!: string;
}

/** The page size of the dead-letter lists. */
class PageSizeQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_DEAD_LETTER_PAGE)
  @JSONSchema({ description: 'Page size.', default: 100 })
  limit?: number;
}

export class DeadLetterPageQuery extends PageSizeQuery {
  /** The `next` of the previous page. */
  @IsOptional()
  @Matches(/^\d{1,15}$/, { message: 'must be the next cursor of a previous page' })
  @JSONSchema({ description: 'The `next` of the previous page; absent: the first page.' })
  cursor?: string;
}

export class QueuePageQuery extends PageSizeQuery {
  /** The `next` of the previous page. */
  @IsOptional()
  @Matches(RESOURCE_NAME_PATTERN, { message: 'must be the next cursor of a previous page' })
  @JSONSchema({ description: 'The `next` of the previous page (the last queue it listed); absent: the first page.' })
  cursor?: string;
}
