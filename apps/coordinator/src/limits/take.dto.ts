import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { CallerChosenId } from '../common/caller-id.decorator';
import { LIMIT_KEY_PATTERN, type TakeRequest } from '@sluice/protocol';
import { CheckedBySchema } from '../http/validation/pipe';

@CheckedBySchema()
export class TakeRequestDto implements TakeRequest {
  @Matches(LIMIT_KEY_PATTERN, { message: 'must be 1-200 of A-Z a-z 0-9 . _ : @ -' })
  @JSONSchema({ description: 'Whose allowance this is: a user, a tenant, an IP address.' })
  key!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  @JSONSchema({ description: 'What this take costs; at most the limit\u2019s burst.', default: 1 })
  cost?: number;

  @CallerChosenId(
    'Caller-chosen id of this take (e.g. a UUID). Asking again with it (after a timeout or a 503) within the ' +
      'limit\u2019s period (and at least 60 s) answers the first granted answer without taking again. A denial ' +
      'is not kept: asking again decides again.',
  )
  requestId?: string;
}
