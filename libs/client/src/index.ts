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
  BudgetMode,
  BudgetView,
  DeadLetter,
  DeadLetterPage,
  DeliveryAttemptRequest,
  DeliveryAttemptResponse,
  DependencyBudgetView,
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
  TakeDecision,
  TakeRequest,
} from '@sluice/protocol';
export { ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '@sluice/protocol';

// The client: retries that ask the fleet, breakers pushed live, deadlines that shrink.
export { Sluice } from './sluice';
export type { SluiceStatus } from './sluice';
export { Dependency } from './dependency';
export { autoTimeoutMs, hedgeDelayMs } from './execute/timing';
export type { AttemptContext, ExecuteOptions } from './execute-options';
export { PolicyEvents } from './policy-events';
export type { GiveUpEvent, RetryEvent } from './policy-events';
export type {
  AutoTimeoutBounds,
  DependencyOptions,
  FallbackMode,
  HedgeOptions,
  SluiceOptions,
  WhenLimited,
} from './options';
export type { BreakerChange } from './fleet/fleet-dependency';
export type { ConfigErrorEvent, FallbackChange, SluiceLogger } from './fleet/coordinator-link';
export type { Disposable, Event } from './events';
export { fetchThrough, parseRetryAfter } from './fetch';
export type { SluiceFetchInit } from './fetch';
export { classify, defaultClassifier, grpcClassifier, isDependencyFailure, retryDenial } from './classification';
export type { Classifier, Failure } from './classification';
export {
  AttemptTimeoutError,
  BreakerOpenError,
  ConfigError,
  CoordinatorUnavailableError,
  DeadlineExceededError,
  GiveUpError,
  HttpStatusError,
  LeaseLostError,
  LimitedError,
  SluiceError,
  SluiceHttpError,
  isAttemptTimeoutError,
  isBreakerOpenError,
  isConfigError,
  isCoordinatorUnavailableError,
  isDeadlineExceededError,
  isGiveUpError,
  isHttpStatusError,
  isLeaseLostError,
  isLimitedError,
  isSluiceError,
  isSluiceHttpError,
} from './errors';
export type { BreakerFacts, GiveUpReason, LimitReason } from './errors';

// Deadlines and attempts across hops: the request context and the server middlewares.
export {
  NO_RETRY_HEADER,
  contextFromHeaders,
  currentContext,
  remainingDeadlineMs,
  runWithContext,
  runWithDeadline,
} from './context/request-context';
export type { IncomingHeaders, SluiceRequestContext } from './context/request-context';
export { runWithIncomingRequest, sluiceExpress, sluiceFastify, sluiceFastifyHook } from './server/middleware';
export type {
  FastifyInstanceLike,
  FastifyReplyLike,
  NodeRequestLike,
  NodeResponseLike,
  SluiceMiddlewareOptions,
} from './server/middleware';

// Idempotency keys and delivery attempts: the coordinator client, server-side idempotency, queue consumers.
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
