import { IsBoolean, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { CallerChosenId } from '../common/caller-id.decorator';
import {
  FAILURE_KINDS,
  MAX_DURATION_MS,
  MAX_RETRY_ATTEMPT,
  type FailureKind,
  type RetryRequest,
} from '@sluice/protocol';
import { CheckedBySchema } from '../http/validation/pipe';

@CheckedBySchema()
export class RetryRequestDto implements RetryRequest {
  @IsInt()
  @Min(1)
  @Max(MAX_RETRY_ATTEMPT)
  @JSONSchema({ description: 'Which retry this is: 1 is the first retry (the second attempt).' })
  attempt!: number;

  @IsOptional()
  @IsBoolean()
  @JSONSchema({ description: 'The operation is idempotent or carries an idempotency key.', default: false })
  idempotent?: boolean;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_DURATION_MS)
  @JSONSchema({ description: 'The caller\u2019s remaining deadline, ms.' })
  deadlineMs?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(599)
  @JSONSchema({ description: 'The HTTP status of the failed attempt (or `error` for a failure without one).' })
  status?: number;

  @IsOptional()
  @IsIn(FAILURE_KINDS)
  @JSONSchema({ description: 'What failed, when there was no status.' })
  error?: FailureKind;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_DURATION_MS)
  @JSONSchema({ description: 'The dependency\u2019s `Retry-After`, in ms: the delay is never shorter.' })
  retryAfterMs?: number;

  @CallerChosenId(
    'Caller-chosen id of this ask (e.g. a UUID). Asking again with it (after a timeout or a 503) answers the ' +
      'first grant, with its delay and budget, and counts no second retry; the grant is kept at least 60 s and ' +
      'at least the budget window. A denial is not kept: asking again decides again.',
  )
  requestId?: string;
}
