export * from './store';
export * from './errors';
export * from './keys';
export * from './request-outcomes';
export * from './redis/connection';
export * from './redis/redis-store';
export * from './memory/memory-store';
