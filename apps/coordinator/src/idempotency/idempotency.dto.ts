import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { CallerChosenId } from '../common/caller-id.decorator';
import {
  BODY_ENCODINGS,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  FINGERPRINT_PATTERN,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_TOKEN_PATTERN,
  MAX_IDEMPOTENCY_RETENTION_SECONDS,
  type BodyEncoding,
  type IdempotencyClaimRequest,
  type IdempotencyCompleteRequest,
  type StoredResponse,
} from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';

const TOKEN_MESSAGE = 'must be the token of a claim';

export class IdempotencyParams extends NamespaceParams {
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: `must match ${IDEMPOTENCY_KEY_PATTERN.source}` })
  @JSONSchema({ description: 'The idempotency key (e.g. the `Idempotency-Key` header of the request).' })
  key!: string;
}

export class ClaimRequestDto implements IdempotencyClaimRequest {
  @IsString()
  @Matches(FINGERPRINT_PATTERN, { message: 'must be 1-256 printable ASCII characters' })
  @JSONSchema({
    description:
      'What identifies the request (e.g. `sha256:` and a digest of method, path, body and caller): a claim of ' +
      'the same key with another fingerprint is a 422.',
  })
  fingerprint!: string;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  @JSONSchema({
    description: 'How long the claim holds the key before another request may take it over.',
    default: DEFAULT_IDEMPOTENCY_LEASE_MS,
  })
  leaseMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_IDEMPOTENCY_RETENTION_SECONDS)
  @JSONSchema({
    description:
      'How long the key is kept: the namespace\u2019s idempotency retention by default, at most its maximum.',
  })
  retentionSeconds?: number;

  @CallerChosenId(
    'Caller-chosen id of this claim (e.g. a UUID). Claiming again with it and the same fingerprint while the ' +
      'claim\u2019s lease runs (after a timeout or a 503) answers 201 with the same `token` and `resumed: true` ' +
      'instead of 409 `in_flight`.',
  )
  claimId?: string;
}

export class StoredResponseDto implements StoredResponse {
  @IsInt()
  @Min(100)
  @Max(599)
  status!: number;

  @IsObject()
  @JSONSchema({
    description: 'Header names as sent; a header sent several times (set-cookie) is an array. At most 100.',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
  })
  headers!: Record<string, string | string[]>;

  @IsString()
  @JSONSchema({ description: 'The body: the text itself (`utf8`) or its bytes in base64 (`base64`).' })
  body!: string;

  @IsOptional()
  @IsIn(BODY_ENCODINGS)
  @JSONSchema({ default: 'utf8' })
  bodyEncoding: BodyEncoding = 'utf8';
}

export class CompleteRequestDto implements IdempotencyCompleteRequest {
  @IsString()
  @Matches(IDEMPOTENCY_TOKEN_PATTERN, { message: TOKEN_MESSAGE })
  @JSONSchema({ description: 'The claim\u2019s fencing token.' })
  token!: string;

  @IsObject()
  @ValidateNested()
  @Type(() => StoredResponseDto)
  @JSONSchema({ description: 'The response to replay to every later claim of the key.' })
  response!: StoredResponseDto;
}

export class ReleaseQueryDto {
  @IsString()
  @Matches(IDEMPOTENCY_TOKEN_PATTERN, { message: TOKEN_MESSAGE })
  @JSONSchema({ description: 'The claim\u2019s fencing token.' })
  token!: string;
}
