import 'reflect-metadata';
import { Type } from 'class-transformer';
import { Allow, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { IDEMPOTENCY_KEY_PATTERN, type DeliveryAckRequest, type DeliveryAttemptRequest } from '@sluice/protocol';
import { QueueParams } from '../common/params.dto';

const MESSAGE_ID_MESSAGE = `must match ${IDEMPOTENCY_KEY_PATTERN.source}`;
export const MAX_ERROR_LENGTH = 4096;
export const MAX_PAGE_SIZE = 1000;

/** A dead letter's id is its message id. */
export class DeadLetterParams extends QueueParams {
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  id!: string;
}

export class DeliveryAttemptDto implements DeliveryAttemptRequest {
  @IsString()
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  messageId!: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX_ERROR_LENGTH)
  error?: string;

  /** Any JSON value; its size is checked by the service. */
  @Allow()
  payload?: unknown;
}

export class DeliveryAckDto implements DeliveryAckRequest {
  @IsString()
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: MESSAGE_ID_MESSAGE })
  messageId!: string;
}

export class DeadLetterPageQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  limit?: number;

  /** The `next` of the previous page. */
  @IsOptional()
  @Matches(/^\d{1,15}$/, { message: 'must be the next cursor of a previous page' })
  cursor?: string;
}
