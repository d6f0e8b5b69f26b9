/**
 * `@sluice/client`: the SDK that asks the fleet before it retries.
 *
 * The wire types of Sluice's HTTP API version 1, shared with the service.
 * @packageDocumentation
 */
export type {
  BreakerState,
  BudgetView,
  DependencyPolicy,
  DependencyReport,
  DependencyView,
  ErrorBody,
  ErrorCode,
  ReportRequest,
  ReportResponse,
  RetryDecision,
  RetryReason,
  RetryRequest,
} from '@sluice/protocol';
export { ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER } from '@sluice/protocol';
