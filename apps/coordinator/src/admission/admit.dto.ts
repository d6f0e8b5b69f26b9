import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { CallerChosenId } from '../common/caller-id.decorator';
import { type AdmitRequest } from '@sluice/protocol';
import { CheckedBySchema } from '../http/validation/pipe';

@CheckedBySchema()
export class AdmitRequestDto implements AdmitRequest {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  @JSONSchema({ description: 'What the call costs against the rate limit; at most its burst.', default: 1 })
  cost?: number;

  @CallerChosenId(
    'Caller-chosen id of this call (e.g. a UUID). Asking again with it (after a timeout or a 503) answers the ' +
      'first grant, with the same `probe` token and `lease` id, taking nothing twice; the grant is kept at least ' +
      '60 s and at least the lease\u2019s and the probe\u2019s life. A refusal is not kept: asking again decides again.',
  )
  requestId?: string;
}
