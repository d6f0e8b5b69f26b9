/**
 * `@sluice/client`: the SDK that asks the fleet before it retries.
 *
 * The wire types of Sluice's HTTP API version 1, shared with the service; a client of the
 * coordinator's idempotency and delivery endpoints; server-side idempotency middleware for
 * Express and Fastify (NestJS: `@sluice/client/nest`); and a queue consumer.
 * @packageDocumentation
 */
export type {
  BreakerState,
  BudgetView,
  DeadLetter,
  DeadLetterPage,
  DeliveryAttemptRequest,
  DeliveryAttemptResponse,
  DependencyPolicy,
  DependencyReport,
  DependencyView,
  ErrorBody,
  ErrorCode,
  IdempotencyClaimRequest,
  IdempotencyClaimResponse,
  IdempotencyKeyView,
  QueuePolicy,
  ReportRequest,
  ReportResponse,
  RetryDecision,
  RetryReason,
  RetryRequest,
  StoredResponse,
} from '@sluice/protocol';
export { ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '@sluice/protocol';
export * from './errors';
export * from './coordinator-client';
export * from './deliveries';
export * from './idempotent-fetch';
export { requestFingerprint, type FingerprintInput } from './idempotency/fingerprint';
export {
  idempotencyOf,
  isNoSideEffect,
  markNoSideEffect,
  releaseIdempotencyClaim,
  type IdempotencyContext,
  type IdempotencyOptions,
  type IncomingRequestLike,
} from './idempotency/engine';
export { expressIdempotency, type ExpressIdempotency } from './idempotency/express';
export {
  fastifyIdempotency,
  type FastifyIdempotencyHooks,
  type FastifyLikeReply,
  type FastifyLikeRequest,
} from './idempotency/fastify';
