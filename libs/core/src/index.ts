export * from './clock';
export * from './sliding-window';
export * from './retry-budget';
export * from './retry-classification';
export * from './backoff';
export * from './random';
export * from './idempotency';
