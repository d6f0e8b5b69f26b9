/** Name rules shared by the service's validation and the SDK (API.md §Conventions). */
export const RESOURCE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,255}$/;
/**
 * A caller-chosen id of a state-changing call (`requestId`, `claimId`): a repeat with the same id
 * answers the first call's outcome instead of changing state again.
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Headers that travel between services. */
export const DEADLINE_HEADER = 'sluice-deadline-ms';
export const ATTEMPT_HEADER = 'sluice-attempt';
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
