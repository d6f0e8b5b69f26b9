import type { NameRegistration } from '@sluice/core';
import type { DependencyRef } from './common';

/** A capped registry's terms: of dependencies in a namespace, or of namespaces. */
export type DependencyRegistration = NameRegistration;

/**
 * Who uses a dependency: a caller (reports, retries, admissions) or an operator (trips, policies).
 * Both hold a place under the cap; only a caller's use makes the dependency known.
 */
export type DependencyUser = 'caller' | 'operator';

/**
 * A dependency registration's outcome: `refused` (the namespace is at its cap), or registered and
 * `called` when a caller had used it within the retention before this registration, else `uncalled`.
 */
export type DependencyRegistered = 'refused' | 'called' | 'uncalled';

/** The capped registries of names: the dependencies of each namespace, and the namespaces. */
export interface RegistryStore {
  /** Registers a use of a dependency in its namespace (a caller's unless `by` says otherwise). */
  registerDependency(
    ref: DependencyRef,
    registration: DependencyRegistration & { by?: DependencyUser },
  ): Promise<DependencyRegistered>;

  /** The dependencies registered in a namespace, by name. */
  listDependencies(namespace: string, retentionMs: number): Promise<string[]>;

  /** How many dependencies a namespace holds. */
  countDependencies(namespace: string, retentionMs: number): Promise<number>;

  /** Registers a namespace that is about to hold state; false when the deployment is at its cap. */
  registerNamespace(namespace: string, registration: DependencyRegistration): Promise<boolean>;

  /** The namespaces registered, by name. */
  listNamespaces(retentionMs: number): Promise<string[]>;
}
