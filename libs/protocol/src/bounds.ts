/**
 * The limits of the wire (docs/api.md): the largest values, sizes and counts the service accepts, which
 * the SDK keeps within. One place for each: the DTOs validate with them, the OpenAPI document states
 * them, the SDK clamps to them.
 */

/** One day, ms. */
export const DAY_MS = 86_400_000;

/** The longest duration a request carries, ms (`deadlineMs`, `retryAfterMs`, `openMs`, `periodMs`, …). */
export const MAX_DURATION_MS = DAY_MS;

/** Largest request body: room for a full report batch or a stored idempotent response. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** The highest `attempt` of a retry ask (1 = the first retry). */
export const MAX_RETRY_ATTEMPT = 100;

/** Most asks in one batch of retry decisions (`POST /v1/{ns}/retries`). */
export const MAX_RETRY_ASKS = 1000;

/** Most dependency entries in one report. */
export const MAX_REPORT_ENTRIES = 100;

/** Most probe outcomes in one report entry. */
export const MAX_REPORT_PROBES = 100;

/** Most bounds of a reported latency histogram (its counts have one more entry). */
export const MAX_HISTOGRAM_BOUNDS = 64;

/** The largest bound of a reported latency histogram, ms. */
export const MAX_HISTOGRAM_BOUND_MS = 3_600_000;

/** Most dependencies one event stream follows (`?deps=`). */
export const MAX_EVENT_DEPENDENCIES = 100;

/** Largest stored idempotent response: body bytes plus header names and values. */
export const MAX_STORED_RESPONSE_BYTES = 256 * 1024;

/** A claim's lease when it asks for none, ms. */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 30_000;

/** The longest an idempotency key may be kept (7 days). */
export const MAX_IDEMPOTENCY_RETENTION_SECONDS = 604_800;

/** Largest payload kept with a dead letter, as JSON. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** Longest `error` text of a delivery attempt. */
export const MAX_DELIVERY_ERROR_LENGTH = 4096;

/** The highest delivery number (`attempt`) a caller may give. */
export const MAX_DELIVERY_ATTEMPT = 1_000_000;

/** Largest page of dead letters. */
export const MAX_DEAD_LETTER_PAGE = 1000;

/** Longest operator's reason (breaker actions, policy changes). */
export const MAX_REASON_LENGTH = 500;

/** The longest a forced breaker state may be asked to last (30 days), seconds. */
export const MAX_FORCED_SECONDS = 30 * 24 * 60 * 60;

/** Largest page of a namespace's policy documents (`GET /admin/v1/{ns}/policies`). */
export const MAX_POLICY_PAGE = 1000;
