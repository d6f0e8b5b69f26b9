export * from './policy';
export * from './retry';
export * from './reports';
export * from './dependency';
export * from './errors';
export * from './names';
export * from './idempotency';
export * from './deliveries';
