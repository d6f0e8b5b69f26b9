export type { BreakerSnapshot } from '@sluice/core';

/** Which resource of which namespace an operation is about. */
export interface DependencyRef {
  namespace: string;
  dependency: string;
}
