import { SHARED_REDIS_URL } from '../../../test/support/redis';
import { describeEdgeConformance } from './edge-conformance';
import { edgeRedisStoreUnderTest } from './edge-redis-under-test';

describeEdgeConformance('RedisStore (standalone)', () => edgeRedisStoreUnderTest({ url: SHARED_REDIS_URL }, 'edges'));
