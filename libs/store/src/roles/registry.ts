import type { NameRegistration } from '@sluice/core';
import type { DependencyRef } from './common';

/** A capped registry's terms: of dependencies in a namespace, or of namespaces. */
export type DependencyRegistration = NameRegistration;

/** The capped registries of names: the dependencies of each namespace, and the namespaces. */
export interface RegistryStore {
  /** Registers a dependency in its namespace; false when the namespace is at its cap. */
  registerDependency(ref: DependencyRef, registration: DependencyRegistration): Promise<boolean>;

  /** The dependencies registered in a namespace, by name. */
  listDependencies(namespace: string, retentionMs: number): Promise<string[]>;

  /** Registers a namespace that is about to hold state; false when the deployment is at its cap. */
  registerNamespace(namespace: string, registration: DependencyRegistration): Promise<boolean>;

  /** The namespaces registered, by name. */
  listNamespaces(retentionMs: number): Promise<string[]>;
}
