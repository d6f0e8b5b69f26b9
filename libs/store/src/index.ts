export * from './store';
export * from './errors';
export * from './keys';
export * from './request-outcomes';
export * from './stored-response';
export * from './redis/connection';
export * from './redis/redis-store';
export { DURABILITIES, type Durability } from './redis/replica-writes';
export * from './memory/memory-store';
