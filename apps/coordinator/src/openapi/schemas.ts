import type { SchemaObject } from '@nestjs/swagger';
import {
  ADMIT_REASONS,
  BODY_ENCODINGS,
  BREAKER_STATES,
  BUDGET_MODES,
  ERROR_CODES,
  IDEMPOTENCY_STATES,
  JITTER_KINDS,
  POLICY_MODES,
  READINESS_STATUSES,
  RETRY_REASONS,
  STORE_KINDS,
  type AdmitDecision,
  type AuditEntry,
  type AuditLog,
  type BackoffPolicy,
  type BreakerDetail,
  type BreakerEvent,
  type BreakerActionResult,
  type BreakerItem,
  type BreakerList,
  type BreakerPolicy,
  type BreakerSummary,
  type BudgetItem,
  type BudgetList,
  type BudgetView,
  type ConcurrencyPolicy,
  type DeadLetter,
  type DeadLetterPage,
  type DeliveryAttemptResponse,
  type DependencyBudgetView,
  type DependencyHistory,
  type DependencyPolicy,
  type DependencyUsage,
  type DependencyView,
  type ErrorBody,
  type ErrorDetail,
  type Health,
  type HistoryPoint,
  type IdempotencyClaimed,
  type IdempotencyCompleted,
  type IdempotencyInFlightBody,
  type IdempotencyKeyView,
  type LatencySummary,
  type LeaseGrant,
  type LeaseRenewal,
  type NamespaceItem,
  type NamespaceList,
  type PolicyDocument,
  type PolicyDocumentItem,
  type PolicyDocumentPage,
  type PolicyEvent,
  type ProbeGrant,
  type QueueItem,
  type QueueList,
  type RateLimitPolicy,
  type Readiness,
  type ServiceIndex,
  type ReportResponse,
  type ReportedDependency,
  type RetryBatchDecision,
  type RetryBudgetPolicy,
  type RetryDecision,
  type StoredResponse,
  type TakeDecision,
} from '@sluice/protocol';
import {
  anyValue,
  arrayOf,
  boolean,
  componentRef,
  componentRefs,
  instant,
  integer,
  nullableInstant,
  number,
  objectSchema,
  oneOf,
  optional,
  recordOf,
  string,
  type Described,
  type DescribedObject,
  type PropertiesOf,
} from './schema-helpers';

/**
 * Response bodies, which are TypeScript interfaces in libs/protocol (no runtime metadata), as
 * OpenAPI schemas. Each component names the protocol type it describes (ResponseComponents), and
 * `objectSchema<T>` makes the compiler check its schema against that type, property by property and
 * type by type: a property added, removed, made optional or nullable, or given another type or
 * another enum there fails the typecheck here. The enums are libs/protocol's own tuples.
 */

/** Every response component of the document, by name: the libs/protocol type it describes. */
export interface ResponseComponents {
  ErrorDetail: ErrorDetail;
  ErrorBody: ErrorBody;
  InFlightBody: IdempotencyInFlightBody;
  BreakerSummary: BreakerSummary;
  BudgetView: BudgetView;
  DependencyBudgetView: DependencyBudgetView;
  RetryDecision: RetryDecision;
  RetryBatchDecision: RetryBatchDecision;
  AdmitDecision: AdmitDecision;
  ReportResponse: ReportResponse;
  BreakerDetail: BreakerDetail;
  LatencySummary: LatencySummary;
  RetryBudgetPolicy: RetryBudgetPolicy;
  BackoffPolicy: BackoffPolicy;
  BreakerPolicy: BreakerPolicy;
  RateLimitPolicy: RateLimitPolicy;
  ConcurrencyPolicy: ConcurrencyPolicy;
  DependencyPolicy: DependencyPolicy;
  DependencyUsage: DependencyUsage;
  DependencyView: DependencyView;
  HistoryPoint: HistoryPoint;
  DependencyHistory: DependencyHistory;
  LeaseRenewal: LeaseRenewal;
  TakeDecision: TakeDecision;
  StoredResponse: StoredResponse;
  IdempotencyClaimed: IdempotencyClaimed;
  IdempotencyCompleted: IdempotencyCompleted;
  IdempotencyKeyView: IdempotencyKeyView;
  DeliveryAttemptResponse: DeliveryAttemptResponse;
  DeadLetter: DeadLetter;
  DeadLetterPage: DeadLetterPage;
  QueueItem: QueueItem;
  QueueList: QueueList;
  BreakerItem: BreakerItem;
  BreakerActionResult: BreakerActionResult;
  BreakerList: BreakerList;
  NamespaceItem: NamespaceItem;
  NamespaceList: NamespaceList;
  BudgetItem: BudgetItem;
  BudgetList: BudgetList;
  AuditEntry: AuditEntry;
  AuditLog: AuditLog;
  PolicyDocumentItem: PolicyDocumentItem;
  PolicyDocumentPage: PolicyDocumentPage;
  BreakerEvent: BreakerEvent;
  PolicyEvent: PolicyEvent;
  Health: Health;
  Readiness: Readiness;
  ServiceIndex: ServiceIndex;
}

const { ref, nullableRef } = componentRefs<ResponseComponents>();

const breakerState = (description: string) => string(description, { enum: BREAKER_STATES });

const ErrorDetailSchema = objectSchema<ErrorDetail>({
  field: string(
    'What is at fault: a body field as a dotted path (`attempt`, `deps.0.latency.counts`, ' +
      '`response.headers.set-cookie`), a path or query parameter (`ns`, `limit`), a header (`if-match`, ' +
      '`content-type`), or `body` for the body as a whole.',
  ),
  message: string('What is wrong with it.'),
});

const ErrorBodySchema = objectSchema<ErrorBody>(
  {
    statusCode: integer('The HTTP status, repeated.'),
    code: string('Machine-readable error code.', { enum: ERROR_CODES }),
    message: string('Human-readable summary.'),
    details: optional(
      arrayOf(ref('ErrorDetail'), 'One entry per problem found (validation_failed names every field at fault).'),
    ),
  },
  { description: 'The body of every 4xx and 5xx answer. Extra fields may be added for some codes.' },
);

const InFlightBodySchema = objectSchema<IdempotencyInFlightBody>(
  {
    statusCode: integer('409.', { enum: [409] }),
    code: string('`in_flight`.', { enum: ['in_flight'] }),
    message: string('Human-readable summary.'),
    state: string('`in_flight`.', { enum: ['in_flight'] }),
    retryAfterMs: integer('When to claim again, ms (also sent as `Retry-After`, in whole seconds).'),
  },
  { description: 'A 409 answer to a claim: another request holds the key and has not finished.' },
);

const forcedReason = (description: string) => string(description, { nullable: true });

const BreakerSummarySchema = objectSchema<BreakerSummary>(
  {
    state: breakerState('The breaker state.'),
    openUntil: optional(
      nullableInstant(
        'Present when open or forced: when an open breaker turns half-open, or a forced state ends (null: until reset)',
      ),
    ),
    reason: optional(
      forcedReason('Present when open or forced: the operator\u2019s reason; null for an automatic open.'),
    ),
  },
  { description: 'The breaker as the decision saw it.' },
);

const BUDGET_VIEW_PROPERTIES = {
  retries: integer('Retries granted (or charged by a local fallback) in the window.'),
  retriesSucceeded: integer(
    'Of those, the retries reported to have succeeded (reports’ `retriesSucceeded`) in the window.',
  ),
  requests: integer('First attempts reported in the window (the deposits).'),
  limit: integer('floor(ratio × requests + minRetriesPerSecond × windowSeconds).'),
  cap: integer(
    'The most retries the window holds however many succeed: floor(maxRatio × requests + minRetriesPerSecond × ' +
      'windowSeconds) under an adaptive budget, the limit under a fixed one.',
  ),
  windowSeconds: integer('The budget window.'),
};

const BUDGET_VIEW_DESCRIPTION =
  'The retry budget of a dependency, fleet-wide. Fixed: a retry is granted while retries < limit. Adaptive: ' +
  'while max(retries − retriesSucceeded, 0) < limit and retries < cap.';

const BudgetViewSchema = objectSchema<BudgetView>(BUDGET_VIEW_PROPERTIES, { description: BUDGET_VIEW_DESCRIPTION });

const DependencyBudgetViewSchema = objectSchema<DependencyBudgetView>(
  { ...BUDGET_VIEW_PROPERTIES, mode: string('How the budget counts.', { enum: BUDGET_MODES }) },
  { description: BUDGET_VIEW_DESCRIPTION },
);

const RetryDecisionSchema = objectSchema<RetryDecision>({
  allow: boolean('Whether to retry. In shadow mode true unless the reason is not_retriable or not_idempotent.'),
  reason: string(
    'What enforcement decided (in shadow mode: what it would have decided). Also the `result` label of ' +
      '`sluice_retry_decisions_total`.',
    { enum: RETRY_REASONS },
  ),
  delayMs: integer('The backoff to wait before the retry: policy backoff with jitter, never below `retryAfterMs`.'),
  budget: ref('BudgetView', 'The budget after this decision.'),
  breaker: ref('BreakerSummary'),
  shadow: boolean('True when the policy is in shadow mode and this decision was not enforced.'),
  retryAfterMs: optional(
    integer(
      'On a `budget_exhausted` or `breaker_open` denial only: the earliest time from now, ms, at which the same ' +
        'ask could be granted if no new requests were reported (the budget: when enough of the oldest counted ' +
        'retries leave the window, or the whole window when only new requests could refill it; the breaker: ' +
        '`openUntil`, or the policy\u2019s open duration when no end is known). Ask again for this dependency no ' +
        'sooner than the smaller of this and your next report; deny locally with the same reason meanwhile.',
    ),
  ),
});

const BATCH_DECISIONS = 'One decision per ask, in the asks\u2019 order: what POST …/deps/{dep}/retry would answer.';
const BATCH_ITEMS = { decisions: arrayOf(ref('RetryDecision'), BATCH_DECISIONS) };
const RetryBatchSchema = objectSchema<RetryBatchDecision>(BATCH_ITEMS);
const ProbeGrantSchema = objectSchema<ProbeGrant>(
  {
    token: string('Report the outcome of this call with this token (`probes` in POST /v1/{ns}/reports).'),
    expiresAt: instant('When the probe lease runs out and another caller may probe'),
  },
  { description: 'Present when this call is the half-open breaker\u2019s probe.' },
);

const LeaseGrantSchema = objectSchema<LeaseGrant>(
  {
    id: string(
      'The concurrency lease id (a UUID): release it with DELETE …/leases/{id} when the call ends, or renew ' +
        'it with POST …/leases/{id}/renew while it runs.',
    ),
    expiresAt: instant('When the lease lapses by itself unless renewed'),
  },
  { description: 'Present when the policy has a concurrency limit and the call was admitted.' },
);

const AdmitDecisionSchema = objectSchema<AdmitDecision>({
  allow: boolean('Whether to make the call (in shadow mode always true).'),
  reason: string('What enforcement decided (in shadow mode: what it would have decided).', {
    enum: ADMIT_REASONS,
  }),
  retryAfterMs: integer(
    'When a refused call may try again, ms (0 when granted). For a breaker forced open until reset, the ' +
      'policy\u2019s openMs.',
  ),
  breaker: ref('BreakerSummary'),
  probe: optional(ProbeGrantSchema),
  lease: optional(LeaseGrantSchema),
  shadow: boolean('True when the policy is in shadow mode.'),
});

const ReportResponseSchema = objectSchema<ReportResponse>({
  deps: recordOf(
    objectSchema<ReportedDependency>({
      breaker: ref('BreakerSummary'),
      reporters: integer(
        'Distinct reporters of the dependency in its budget window, the caller included (a client\u2019s ' +
          'share of the fleet is 1 / reporters).',
      ),
    }),
    'Each reported dependency, by name, with its breaker state after the report.',
  ),
});

const BreakerDetailSchema = objectSchema<BreakerDetail>({
  state: breakerState('The breaker state.'),
  since: nullableInstant('Since when it is in this state'),
  openUntil: nullableInstant('While open: when it turns half-open; while forced: when the forced state ends'),
  reason: forcedReason('The operator\u2019s reason for a forced state; null otherwise.'),
  failureRate: number('Failed share of the calls in the window, 0–1.'),
  slowRate: number('Slow share of the calls in the window, 0–1.'),
  calls: integer('Calls reported in the window.'),
});

const LatencySummarySchema = objectSchema<LatencySummary>(
  {
    p50: number('Median, ms; null without samples.', { nullable: true }),
    p95: number('95th percentile, ms; null without samples.', { nullable: true }),
    p99: number('99th percentile, ms; null without samples.', { nullable: true }),
    count: integer('Samples in the window.'),
  },
  { description: 'Latency reported by the whole fleet over the breaker window.' },
);

const RetryBudgetPolicySchema = objectSchema<RetryBudgetPolicy>({
  mode: optional(
    string(
      '`adaptive` (default): a retry that succeeded gives its grant back, under the cap maxRatio sets; ' +
        '`fixed`: grant while retries < limit.',
      { enum: BUDGET_MODES },
    ),
  ),
  ratio: number(),
  maxRatio: optional(
    number(
      'Adaptive only: the cap is floor(maxRatio × requests + minRetriesPerSecond × windowSeconds). Default 0.5; ' +
        'never below ratio (a document that sets it below is refused).',
    ),
  ),
  minRetriesPerSecond: number(),
  windowSeconds: integer(),
  maxAttempts: integer('Every attempt counts, the first included.'),
});

const BackoffPolicySchema = objectSchema<BackoffPolicy>({
  baseMs: integer(),
  capMs: integer(),
  jitter: string(undefined, { enum: JITTER_KINDS }),
});

const BreakerPolicySchema = objectSchema<BreakerPolicy>({
  failureRateThreshold: number(),
  slowCallRateThreshold: number(),
  slowCallMs: integer(),
  minimumCalls: integer(),
  windowSeconds: integer(),
  openMs: integer(),
  maxOpenMs: integer(),
  halfOpenProbes: integer(),
  closeAfterSuccesses: integer(),
  probeLeaseMs: integer(),
  minReporters: integer('Distinct reporters that must have reported failures in the window before the breaker opens.'),
});

const RateLimitPolicySchema = objectSchema<RateLimitPolicy>({ rate: integer(), periodMs: integer(), burst: integer() });
const ConcurrencyPolicySchema = objectSchema<ConcurrencyPolicy>({ limit: integer(), leaseMs: integer() });

const DependencyPolicySchema = objectSchema<DependencyPolicy>(
  {
    mode: string(undefined, { enum: POLICY_MODES }),
    retryBudget: ref('RetryBudgetPolicy'),
    backoff: ref('BackoffPolicy'),
    breaker: ref('BreakerPolicy'),
    rateLimit: nullableRef('RateLimitPolicy', 'Null: no rate limit.'),
    concurrency: nullableRef('ConcurrencyPolicy', 'Null: no concurrency limit.'),
  },
  {
    description:
      'The policy in effect for a dependency: the built-in defaults overlaid with the policies file, the ' +
      'namespace default and the dependency\u2019s own document. Every field is present.',
  },
);

const DependencyUsageSchema = objectSchema<DependencyUsage>(
  {
    leases: integer('Concurrency leases held now (0 without a concurrency limit).'),
    rateRemaining: integer('What is left of the rate limit\u2019s burst now; null without a rate limit.', {
      nullable: true,
    }),
  },
  { description: 'What the dependency\u2019s rate and concurrency limits hold now.' },
);

const DependencyViewSchema = objectSchema<DependencyView>({
  namespace: string(),
  dependency: string(),
  breaker: ref('BreakerDetail'),
  budget: ref('DependencyBudgetView'),
  reporters: integer('Distinct reporters (client processes) that reported it within the budget window.'),
  usage: ref('DependencyUsage'),
  latency: ref('LatencySummary'),
  policy: ref('DependencyPolicy'),
});

const HistoryPointSchema = objectSchema<HistoryPoint>(
  {
    at: instant('When the step starts (a multiple of `stepMs`)'),
    calls: integer('Calls reported within the step (successes and failures).'),
    failureRate: number('Failed share of those calls, 0–1 (0 without calls).'),
    slowRate: number('Slow share of those calls, 0–1 (0 without calls).'),
    budget: ref('BudgetView', 'The budget window as the step\u2019s last report left it.'),
    budgetUse: number(
      'How much of the budget was used: max(max(retries − retriesSucceeded, 0) / limit, retries / cap); 1 or ' +
        'more: no retry fitted.',
    ),
    state: breakerState('The breaker\u2019s state after the step\u2019s last report.'),
  },
  { description: 'One step of a dependency\u2019s history: what the reports within it said.' },
);

const DependencyHistorySchema = objectSchema<DependencyHistory>({
  namespace: string(),
  dependency: string(),
  stepMs: integer('The resolution: one point per step (10,000 ms).'),
  spanMs: integer('How far back the history goes (900,000 ms: 15 minutes).'),
  points: arrayOf(ref('HistoryPoint'), 'One per step that had reports, oldest first; a step without reports has none.'),
});

const TakeDecisionSchema = objectSchema<TakeDecision>({
  allow: boolean('Whether the take was granted (in shadow mode always true).'),
  limit: integer('The burst (also `RateLimit-Limit`).'),
  remaining: integer('What is left of the burst after this take (also `RateLimit-Remaining`).'),
  retryAfterMs: integer('When a denied take would be granted, ms; 0 when allowed.'),
  resetMs: integer('Until the limit is back to a full burst, ms (`RateLimit-Reset` is this in whole seconds).'),
  shadow: boolean('True when the named limit is in shadow mode: denials are counted, not enforced.'),
});

const StoredResponseSchema = objectSchema<StoredResponse>(
  {
    status: integer('The stored status.', { minimum: 100, maximum: 599 }),
    headers: recordOf(
      oneOf(string(), arrayOf(string())),
      'Header names as sent; a header sent several times (set-cookie) is an array.',
    ),
    body: string('The body: the text itself (`utf8`) or its bytes in base64 (`base64`).'),
    bodyEncoding: string(undefined, { enum: BODY_ENCODINGS }),
  },
  { description: 'A response as stored and replayed, byte for byte.' },
);

const IdempotencyClaimedSchema = objectSchema<IdempotencyClaimed>({
  state: string(undefined, { enum: ['claimed'] }),
  token: string('Fencing token: only it completes (PUT) or releases (DELETE) the key.'),
  recovered: boolean('True when an expired in-flight lease was taken over: the earlier attempt may have partly run.'),
  resumed: optional(
    boolean('True when this answers a repeat of the caller\u2019s own claim (same `claimId`): the same token.'),
  ),
  leaseExpiresAt: instant('When this claim\u2019s lease runs out and another request may take the key over'),
  durable: boolean(
    'True when the completion (PUT) is acknowledged only once a replica of the store holds it too ' +
      '(`SLUICE_DURABILITY`); false when a store that loses its data forgets it and the key becomes new again.',
  ),
});

const IdempotencyCompletedSchema = objectSchema<IdempotencyCompleted>({
  state: string(undefined, { enum: ['completed'] }),
  response: ref('StoredResponse'),
});

const IdempotencyKeyViewSchema = objectSchema<IdempotencyKeyView>({
  state: string(undefined, { enum: IDEMPOTENCY_STATES }),
  createdAt: instant('When the key was first claimed'),
  expiresAt: instant('When the key is forgotten and becomes new again'),
  leaseExpiresAt: optional(instant('While in flight: when the holder\u2019s lease runs out')),
  completedAt: optional(instant('When the response was stored')),
});

const DeliveryAttemptResponseSchema = objectSchema<DeliveryAttemptResponse>({
  attempt: integer('The number of this failed attempt (1 = the first delivery).'),
  maxAttempts: integer('The queue policy\u2019s maxAttempts.'),
  deadLetter: boolean('True when the message is now parked in the dead-letter store: do not deliver it again.'),
  delayMs: integer('The backoff before the next delivery; 0 once dead-lettered.'),
});

const DeadLetterSchema = objectSchema<DeadLetter>({
  id: string('The dead letter\u2019s id: its message id (a message has at most one per queue).'),
  messageId: string(),
  payload: anyValue('The payload recorded with the last attempt (any JSON value); null if none was sent.'),
  error: string('The last attempt\u2019s error; null if none was sent.', { nullable: true }),
  attempts: integer('Failed attempts recorded.'),
  deadLetteredAt: instant('When the message was parked'),
  firstAttemptAt: instant('When its first failed attempt was recorded'),
});

const DeadLetterPageSchema = objectSchema<DeadLetterPage>({
  items: arrayOf(ref('DeadLetter'), 'Oldest first.'),
  next: string('The `cursor` of the next page; null on the last page.', { nullable: true }),
});

const QueueItemSchema = objectSchema<QueueItem>({
  queue: string(),
  deadLetters: integer('How many dead letters the queue holds now (at least 1).'),
  lastDeadLetteredAt: instant('When the queue last parked a message'),
});

const QueueListSchema = objectSchema<QueueList>({
  items: arrayOf(ref('QueueItem'), 'By name; a page may hold fewer than `limit` (a queue emptied since is left out).'),
  next: string('The `cursor` of the next page; null on the last page.', { nullable: true }),
});

const BREAKER_ITEM_PROPERTIES = {
  dependency: string(),
  state: breakerState('The breaker state.'),
  since: nullableInstant('Since when it is in this state'),
  openUntil: nullableInstant(
    'When an open breaker turns half-open, or a forced state with a duration ends; null otherwise',
  ),
  reason: forcedReason('The operator\u2019s reason for a forced state; null otherwise.'),
} satisfies PropertiesOf<BreakerItem>;

const BreakerItemSchema = objectSchema<BreakerItem>(BREAKER_ITEM_PROPERTIES);

const BreakerActionResultSchema = objectSchema<BreakerActionResult>(
  {
    ...BREAKER_ITEM_PROPERTIES,
    known: boolean(
      'False when no caller has reported or asked for the dependency within the registry\u2019s retention (a ' +
        'day): likely a typo. Operator tools ask for confirmation.',
    ),
  },
  { description: 'The breaker after the action.' },
);

const NamespaceItemSchema = objectSchema<NamespaceItem>({
  namespace: string(),
  dependencies: integer('How many dependencies the namespace holds.'),
});
const BudgetItemSchema = objectSchema<BudgetItem>({
  dependency: string(),
  retries: integer('Retries granted in the window.'),
  retriesSucceeded: integer('Of those, the retries reported to have succeeded.'),
  requests: integer('First attempts reported in the window.'),
  limit: integer('The budget\u2019s limit.'),
  cap: integer('The most retries the window holds however many succeed (the limit under a fixed budget).'),
  exhausted: boolean('No retry fits now: retries are being denied budget_exhausted.'),
});

const AuditEntrySchema = objectSchema<AuditEntry>({
  at: instant('When it was recorded'),
  actor: string('The token id (`anonymous` when authentication is off).'),
  action: string(
    'What was done: breaker.trip, breaker.force_close, breaker.reset, policy.put, policy.delete, ' +
      'dead_letter.redrive, dead_letter.purge.',
  ),
  namespace: string(),
  target: string('The dependency, the policy document (`default`, `deps/{dep}`, …) or `{queue}/{id}`.'),
  reason: string('The reason given (`reason` or `?reason=`); null if none.', { nullable: true }),
  durationMs: integer(
    'How long the forced state a trip or force-close set lasts (its `durationSeconds`); null until reset, or ' +
      'for another action.',
    { nullable: true },
  ),
  endsAt: nullableInstant('When that forced state ends; null until reset, or for another action'),
});

const BreakerListSchema = objectSchema<BreakerList>({ items: arrayOf(ref('BreakerItem')) });
const BudgetListSchema = objectSchema<BudgetList>({ items: arrayOf(ref('BudgetItem')) });
const NamespaceListSchema = objectSchema<NamespaceList>({
  items: arrayOf(ref('NamespaceItem'), 'By name.'),
});
const AuditLogSchema = objectSchema<AuditLog>({
  items: arrayOf(ref('AuditEntry'), 'The latest entries, oldest first.'),
});

/** A stored document, whose schema is its kind's: the documents' request schemas (the DTOs). */
const policyDocument = (description: string) =>
  ({
    description,
    anyOf: ['DependencyPolicyDto', 'NamedLimitPolicyDto', 'QueuePolicyDto'].map(componentRef),
  }) as Described<PolicyDocument>;

const PolicyDocumentItemSchema = objectSchema<PolicyDocumentItem>({
  target: string(
    'Its path under `/admin/v1/{ns}/policies/`: `default`, `deps/{dep}`, `limits/{limit}` or `queues/{queue}`.',
  ),
  etag: string('Its version, as its own GET answers it in `ETag` (`"3"`): the `If-Match` of a change.'),
  document: policyDocument(
    'The document as stored: a DependencyPolicyDto for `default` and `deps/…`, a NamedLimitPolicyDto for ' +
      '`limits/…`, a QueuePolicyDto for `queues/…`.',
  ),
});

const PolicyDocumentPageSchema = objectSchema<PolicyDocumentPage>({
  items: arrayOf(ref('PolicyDocumentItem'), 'Ordered by `target`.'),
  next: string('The `cursor` of the next page; null on the last page.', { nullable: true }),
});

/** Server-Sent Events `data` of GET /v1/{ns}/events, for SDK generators (SSE has no OpenAPI 3.0 form). */
const BreakerEventSchema = objectSchema<BreakerEvent>(
  {
    dep: string(),
    state: breakerState('The new state.'),
    since: nullableInstant('Since when'),
    openUntil: nullableInstant('While open: when it turns half-open; while forced: when the forced state ends'),
    reason: forcedReason('The operator\u2019s reason, for forced_open and forced_closed; null otherwise.'),
  },
  { description: 'The data of an `event: breaker` message.' },
);

const PolicyEventSchema = objectSchema<PolicyEvent>(
  {
    dep: string('The dependency whose document changed; null when the namespace default changed.', {
      nullable: true,
    }),
  },
  { description: 'The data of an `event: policy` message: read GET /v1/{ns}/deps/{dep} again for the new policy.' },
);

const HealthSchema = objectSchema<Health>({ status: string(undefined, { enum: ['ok'] }) });
const ReadinessSchema = objectSchema<Readiness>({
  status: string('`ok`, or `unavailable` while the store does not answer.', { enum: READINESS_STATUSES }),
  store: string('The store: `memory` (embedded, single process) or `redis` (a server or a Cluster).', {
    enum: STORE_KINDS,
  }),
});

const ServiceIndexSchema = objectSchema<ServiceIndex>({
  service: string(undefined, { enum: ['sluice'] }),
  message: string('Where to go, in a sentence.'),
  console: string('The operators\u2019 web console, a path on this host.'),
  docs: string('The API documentation (Swagger UI), a path on this host.'),
  openapi: string('The OpenAPI document, a path on this host.'),
});

/** Every response schema, by component name. */
export const RESPONSE_SCHEMAS: { [K in keyof ResponseComponents]: DescribedObject<ResponseComponents[K]> } = {
  ErrorDetail: ErrorDetailSchema,
  ErrorBody: ErrorBodySchema,
  InFlightBody: InFlightBodySchema,
  BreakerSummary: BreakerSummarySchema,
  BudgetView: BudgetViewSchema,
  DependencyBudgetView: DependencyBudgetViewSchema,
  RetryDecision: RetryDecisionSchema,
  RetryBatchDecision: RetryBatchSchema,
  AdmitDecision: AdmitDecisionSchema,
  ReportResponse: ReportResponseSchema,
  BreakerDetail: BreakerDetailSchema,
  LatencySummary: LatencySummarySchema,
  RetryBudgetPolicy: RetryBudgetPolicySchema,
  BackoffPolicy: BackoffPolicySchema,
  BreakerPolicy: BreakerPolicySchema,
  RateLimitPolicy: RateLimitPolicySchema,
  ConcurrencyPolicy: ConcurrencyPolicySchema,
  DependencyPolicy: DependencyPolicySchema,
  DependencyUsage: DependencyUsageSchema,
  DependencyView: DependencyViewSchema,
  HistoryPoint: HistoryPointSchema,
  DependencyHistory: DependencyHistorySchema,
  LeaseRenewal: objectSchema<LeaseRenewal>({ expiresAt: instant('When the renewed lease lapses') }),
  TakeDecision: TakeDecisionSchema,
  StoredResponse: StoredResponseSchema,
  IdempotencyClaimed: IdempotencyClaimedSchema,
  IdempotencyCompleted: IdempotencyCompletedSchema,
  IdempotencyKeyView: IdempotencyKeyViewSchema,
  DeliveryAttemptResponse: DeliveryAttemptResponseSchema,
  DeadLetter: DeadLetterSchema,
  DeadLetterPage: DeadLetterPageSchema,
  QueueItem: QueueItemSchema,
  QueueList: QueueListSchema,
  BreakerItem: BreakerItemSchema,
  BreakerActionResult: BreakerActionResultSchema,
  BreakerList: BreakerListSchema,
  NamespaceItem: NamespaceItemSchema,
  NamespaceList: NamespaceListSchema,
  BudgetItem: BudgetItemSchema,
  BudgetList: BudgetListSchema,
  AuditEntry: AuditEntrySchema,
  AuditLog: AuditLogSchema,
  PolicyDocumentItem: PolicyDocumentItemSchema,
  PolicyDocumentPage: PolicyDocumentPageSchema,
  BreakerEvent: BreakerEventSchema,
  PolicyEvent: PolicyEventSchema,
  Health: HealthSchema,
  Readiness: ReadinessSchema,
  ServiceIndex: ServiceIndexSchema,
};

/** The same, as the document holds them. */
export const RESPONSE_COMPONENTS: Record<string, SchemaObject> = RESPONSE_SCHEMAS;
