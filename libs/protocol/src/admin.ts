/**
 * The admin API's lists and actions: /admin/v1/namespaces, /admin/v1/{ns}/breakers, /budgets,
 * /policies, /admin/v1/audit.
 */
import type { DependencyPolicyOverride, NamedLimitPolicy, QueuePolicyOverride } from './policy';
import type { BreakerState } from './retry';

/** A list answer: `{"items": […]}`. */
export interface ItemList<T> {
  items: T[];
}

/** One breaker of GET /admin/v1/{ns}/breakers, and the answer to a breaker action. */
export interface BreakerItem {
  dependency: string;
  state: BreakerState;
  since: number | null;
  openUntil: number | null;
  /** The operator's reason for a forced state; null otherwise. */
  reason: string | null;
}

export type BreakerList = ItemList<BreakerItem>;

/**
 * The answer to a trip, force-close or reset: the breaker after the action, and whether any caller
 * has reported or asked for the dependency within the registry's retention (false: a likely typo).
 */
export interface BreakerActionResult extends BreakerItem {
  known: boolean;
}

/** One namespace of GET /admin/v1/namespaces. */
export interface NamespaceItem {
  namespace: string;
  /** How many dependencies the namespace holds. */
  dependencies: number;
}

export type NamespaceList = ItemList<NamespaceItem>;

/** One retry budget of GET /admin/v1/{ns}/budgets. */
export interface BudgetItem {
  dependency: string;
  retries: number;
  retriesSucceeded: number;
  requests: number;
  limit: number;
  cap: number;
  exhausted: boolean;
}

export type BudgetList = ItemList<BudgetItem>;

/** POST /admin/v1/{ns}/breakers/{dep}/trip and …/force-close. */
export interface ForceBreakerRequest {
  reason: string;
  durationSeconds?: number;
}

/** POST /admin/v1/{ns}/breakers/{dep}/reset (the body may be left out). */
export interface ResetBreakerRequest {
  reason?: string;
}

/** One entry of GET /admin/v1/audit. */
export interface AuditEntry {
  /** When it was recorded (epoch ms, the store's clock). */
  at: number;
  /** The token id (`anonymous` when authentication is off). */
  actor: string;
  action: string;
  namespace: string;
  target: string;
  reason: string | null;
  /** How long the forced state a trip or force-close set lasts; null until reset, or for another action. */
  durationMs: number | null;
  /** When that forced state ends (epoch ms); null until reset, or for another action. */
  endsAt: number | null;
}

export type AuditLog = ItemList<AuditEntry>;

/** A stored policy document: a dependency's or the namespace default, a named limit's, a queue's. */
export type PolicyDocument = DependencyPolicyOverride | NamedLimitPolicy | QueuePolicyOverride;

/** One stored document of GET /admin/v1/{ns}/policies. */
export interface PolicyDocumentItem {
  /** Its path under `/admin/v1/{ns}/policies/` (POLICY_TARGET_PATTERN): `default`, `deps/payments-api`, … */
  target: string;
  /** Its version, as the document's own GET answers it (`"3"`): the `If-Match` of a change. */
  etag: string;
  document: PolicyDocument;
}

/** A page of GET /admin/v1/{ns}/policies, ordered by `target`. */
export interface PolicyDocumentPage {
  items: PolicyDocumentItem[];
  /** The cursor of the next page; null on the last page. */
  next: string | null;
}
