import type { AuditStore } from './roles/audit';
import type { BreakerAdminStore } from './roles/breakers';
import type { StoreConnection } from './roles/connection';
import type { DecisionStore } from './roles/decisions';
import type { DeliveryStore } from './roles/deliveries';
import type { EventStore } from './roles/events';
import type { HistoryStore } from './roles/history';
import type { IdempotencyStore } from './roles/idempotency';
import type { LimitStore } from './roles/limits';
import type { PolicyStore } from './roles/policies';
import type { RegistryStore } from './roles/registry';
import type { ResetStore } from './roles/resets';

export * from './roles/audit';
export * from './roles/breakers';
export * from './roles/common';
export * from './roles/connection';
export * from './roles/decisions';
export * from './roles/deliveries';
export * from './roles/events';
export * from './roles/history';
export * from './roles/idempotency';
export * from './roles/limits';
export * from './roles/policies';
export * from './roles/registry';
export * from './roles/resets';

/**
 * The seam between Sluice's features and its state, as the intersection of its roles (each in
 * ./roles, with its types). Every method is one atomic operation: one Lua script call on Redis,
 * one synchronous step in memory. Failures to reach the state are thrown as
 * StoreUnavailableError; decisions are returned as values.
 */
export type Store = StoreConnection &
  DecisionStore &
  LimitStore &
  BreakerAdminStore &
  HistoryStore &
  RegistryStore &
  PolicyStore &
  AuditStore &
  EventStore &
  IdempotencyStore &
  DeliveryStore &
  ResetStore;

/** The operations of a Store, each a role's method: what a backend composes from its per-domain parts. */
export type StoreOperations = Omit<Store, 'kind'>;
