import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsObject, IsOptional, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import {
  BUDGET_MODES,
  JITTER_KINDS,
  MAX_DURATION_MS,
  MAX_IDEMPOTENCY_RETENTION_SECONDS,
  POLICY_MODES,
  type BackoffPolicy,
  type BreakerPolicy,
  type BudgetMode,
  type ConcurrencyPolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type JitterKind,
  type NamedLimitPolicy,
  type PolicyMode,
  type QueuePolicyOverride,
  type RateLimitPolicy,
  type RetryBudgetPolicy,
} from '@sluice/protocol';

/** Every section is optional: omitted fields take the defaults (docs/api.md, Policy documents). */
export class RetryBudgetPolicyDto implements Partial<RetryBudgetPolicy> {
  @IsOptional()
  @IsIn(BUDGET_MODES)
  mode?: BudgetMode;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  ratio?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  maxRatio?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100_000)
  minRetriesPerSecond?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(600)
  windowSeconds?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  maxAttempts?: number;
}

export class BackoffPolicyDto implements Partial<BackoffPolicy> {
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(600_000)
  baseMs?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  capMs?: number;

  @IsOptional()
  @IsIn(JITTER_KINDS)
  jitter?: JitterKind;
}

export class BreakerPolicyDto implements Partial<BreakerPolicy> {
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.01)
  @Max(1)
  failureRateThreshold?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.01)
  @Max(1)
  slowCallRateThreshold?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(600_000)
  slowCallMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  minimumCalls?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(600)
  windowSeconds?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_DURATION_MS)
  openMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_DURATION_MS)
  maxOpenMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  halfOpenProbes?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  closeAfterSuccesses?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(600_000)
  probeLeaseMs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  minReporters?: number;
}

export class RateLimitPolicyDto implements RateLimitPolicy {
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  rate!: number;

  @IsInt()
  @Min(1)
  @Max(MAX_DURATION_MS)
  periodMs!: number;

  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  burst!: number;
}

export class NamedLimitPolicyDto extends RateLimitPolicyDto implements NamedLimitPolicy {
  @IsOptional()
  @IsIn(POLICY_MODES)
  mode?: PolicyMode;
}

export class ConcurrencyPolicyDto implements ConcurrencyPolicy {
  @IsInt()
  @Min(1)
  @Max(100_000)
  limit!: number;

  @IsInt()
  @Min(100)
  @Max(3_600_000)
  leaseMs!: number;
}

export class DependencyPolicyDto implements DependencyPolicyOverride {
  @IsOptional()
  @IsIn(POLICY_MODES)
  mode?: PolicyMode;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RetryBudgetPolicyDto)
  retryBudget?: RetryBudgetPolicyDto;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => BackoffPolicyDto)
  backoff?: BackoffPolicyDto;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => BreakerPolicyDto)
  breaker?: BreakerPolicyDto;

  @ValidateIf((policy: DependencyPolicyDto) => policy.rateLimit !== undefined && policy.rateLimit !== null)
  @IsObject()
  @ValidateNested()
  @Type(() => RateLimitPolicyDto)
  @JSONSchema({ description: 'A per-dependency rate limit checked by POST …/admit; null: none.', nullable: true })
  rateLimit?: RateLimitPolicyDto | null;

  @ValidateIf((policy: DependencyPolicyDto) => policy.concurrency !== undefined && policy.concurrency !== null)
  @IsObject()
  @ValidateNested()
  @Type(() => ConcurrencyPolicyDto)
  @JSONSchema({
    description: 'A fleet-wide concurrency limit enforced with leases by POST …/admit; null: none.',
    nullable: true,
  })
  concurrency?: ConcurrencyPolicyDto | null;
}

/** A queue's document: every field optional, omitted ones take the defaults (docs/api.md, Policy documents). */
export class QueuePolicyDto implements QueuePolicyOverride {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  maxAttempts?: number;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => BackoffPolicyDto)
  backoff?: BackoffPolicyDto;
}

export class IdempotencyPolicyDto implements Partial<IdempotencyPolicy> {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_IDEMPOTENCY_RETENTION_SECONDS)
  retentionSeconds?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_IDEMPOTENCY_RETENTION_SECONDS)
  maxRetentionSeconds?: number;
}
