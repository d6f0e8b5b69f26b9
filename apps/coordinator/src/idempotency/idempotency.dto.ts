import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';
import {
  IDEMPOTENCY_KEY_PATTERN,
  type BodyEncoding,
  type IdempotencyClaimRequest,
  type IdempotencyCompleteRequest,
  type StoredResponse,
} from '@sluice/protocol';
import { NamespaceParams } from '../common/params.dto';
import { MAX_IDEMPOTENCY_RETENTION_SECONDS } from '../policies/policy.dto';

/** Fencing tokens are made by the service (base64url); this bounds what a caller may send back. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
const TOKEN_MESSAGE = 'must be the token of a claim';
export const DEFAULT_LEASE_MS = 30_000;

export class IdempotencyParams extends NamespaceParams {
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: `must match ${IDEMPOTENCY_KEY_PATTERN.source}` })
  key!: string;
}

export class ClaimRequestDto implements IdempotencyClaimRequest {
  /** Printable ASCII, e.g. `sha256:<base64url>`. */
  @IsString()
  @Matches(/^[\x21-\x7e]{1,256}$/, { message: 'must be 1-256 printable ASCII characters' })
  fingerprint!: string;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  leaseMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_IDEMPOTENCY_RETENTION_SECONDS)
  retentionSeconds?: number;
}

export class StoredResponseDto implements StoredResponse {
  @IsInt()
  @Min(100)
  @Max(599)
  status!: number;

  /** Checked entry by entry in stored-response.ts. */
  @IsObject()
  headers!: Record<string, string | string[]>;

  @IsString()
  body!: string;

  @IsOptional()
  @IsIn(['utf8', 'base64'])
  bodyEncoding: BodyEncoding = 'utf8';
}

export class CompleteRequestDto implements IdempotencyCompleteRequest {
  @IsString()
  @Matches(TOKEN_PATTERN, { message: TOKEN_MESSAGE })
  token!: string;

  @IsObject()
  @ValidateNested()
  @Type(() => StoredResponseDto)
  response!: StoredResponseDto;
}

export class ReleaseQueryDto {
  @IsString()
  @Matches(TOKEN_PATTERN, { message: TOKEN_MESSAGE })
  token!: string;
}
