/** Name rules shared by the service's validation and the SDK (docs/api.md, Conventions). */
import { MAX_EVENT_DEPENDENCIES } from './bounds';

/** `{ns}`, `{dep}`, `{limit}`, `{queue}`. */
const RESOURCE_NAME = '[a-z0-9][a-z0-9._-]{0,127}';
export const RESOURCE_NAME_PATTERN = new RegExp(`^${RESOURCE_NAME}$`);
/**
 * A policy document's path under `/admin/v1/{ns}/policies/`: `default`, `deps/<dep>`,
 * `limits/<limit>` or `queues/<queue>`.
 */
export const POLICY_TARGET_PATTERN = new RegExp(`^(?:default|(?:deps|limits|queues)/${RESOURCE_NAME})$`);
/** `?deps=` of the event stream: 1 to MAX_EVENT_DEPENDENCIES comma-separated resource names. */
export const DEPENDENCY_LIST_PATTERN = new RegExp(
  `^${RESOURCE_NAME}(,${RESOURCE_NAME}){0,${MAX_EVENT_DEPENDENCIES - 1}}$`,
);
/** An idempotency `{key}`, and a delivered message's id. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,255}$/;
/**
 * A caller-chosen id of a state-changing call (`requestId`, `claimId`): a repeat with the same id
 * answers the first call's outcome instead of changing state again. A report's `reporter` and a
 * request's `x-request-id` follow the same rule.
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/** A named limit's `key`: whose allowance it is (a user, a tenant, an IP address). */
export const LIMIT_KEY_PATTERN = /^[A-Za-z0-9._:@-]{1,200}$/;
/** A concurrency lease's id (the service makes UUIDs). */
export const LEASE_ID_PATTERN = /^[A-Za-z0-9-]{1,64}$/;
/** An idempotency claim's fencing token (the service makes base64url). */
export const IDEMPOTENCY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
/** A request fingerprint: printable ASCII, e.g. `sha256:<base64url>`. */
export const FINGERPRINT_PATTERN = /^[\x21-\x7e]{1,256}$/;

/** Headers that travel between services. */
export const DEADLINE_HEADER = 'sluice-deadline-ms';
export const ATTEMPT_HEADER = 'sluice-attempt';
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
