import type { StoreOperations } from './store';

/**
 * The base class of a Store composed of per-domain parts: its instances hold the parts' methods
 * (each part an object of one role's methods, closing over the backend's shared context).
 * `super({ ...decisions, ...limits, … })` is type-checked to supply every operation.
 */
export const ComposedStore = class {
  constructor(operations: StoreOperations) {
    Object.assign(this, operations);
  }
} as new (operations: StoreOperations) => StoreOperations;
