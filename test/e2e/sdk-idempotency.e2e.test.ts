import { SHARED_REDIS_URL } from '../support/redis';
import { describeDeliveryConsumer, describeIdempotentApp, startCoordinators } from '../support/sdk-suites';

// The SDK through real servers: the example Nest app (two instances) and the queue consumer,
// against a real coordinator on the embedded store and on Redis. The Cluster run is in
// redis-cluster.e2e.test.ts.
describeIdempotentApp('embedded store', () => startCoordinators('embedded'));
describeIdempotentApp('Redis', () => startCoordinators({ redisUrl: SHARED_REDIS_URL }));
describeDeliveryConsumer('embedded store', () => startCoordinators('embedded'));
describeDeliveryConsumer('Redis', () => startCoordinators({ redisUrl: SHARED_REDIS_URL }));
