import { Logger, type Provider } from '@nestjs/common';
import { systemClock, type Clock } from '@sluice/core';
import {
  MemoryStore,
  RedisStore,
  SluiceKeys,
  createRedisClient,
  createRedisSubscriber,
  type Store,
} from '@sluice/store';
import { SLUICE_CONFIG } from '../config/config.module';
import type { SluiceConfig } from '../config/config';
import { MetricsService } from '../metrics/metrics.service';
import { instrumentStore } from './instrumented-store';
import { RedisConnectionLog } from './redis-connection-log';
import { capNamespaces } from './namespace-cap';

export const STORE = Symbol('STORE');
/** The embedded store's clock (CoreModuleOptions.storeClock). */
export const STORE_CLOCK = Symbol('STORE_CLOCK');

/** Redis (standalone or Cluster) when configured, else the embedded single-process store. */
export function createStore(config: SluiceConfig, logger = new Logger('Store'), clock: Clock = systemClock): Store {
  const keys = new SluiceKeys(config.keyPrefix);
  if (config.redisClusterNodes || config.redisUrl) {
    const connection = {
      url: config.redisUrl,
      clusterNodes: config.redisClusterNodes,
      commandTimeoutMs: config.storeTimeoutMs,
    };
    const client = createRedisClient(connection);
    const connectionLog = new RedisConnectionLog(
      logger,
      config.redisClusterNodes ? `Cluster ${config.redisClusterNodes.join(', ')}` : redactUrl(config.redisUrl ?? ''),
    );
    client.on('error', (error: Error) => connectionLog.failed(error));
    client.on('ready', () => connectionLog.ready());
    const subscriber = createRedisSubscriber(connection);
    logger.log(
      config.redisClusterNodes
        ? `state in Redis Cluster (${config.redisClusterNodes.join(', ')})`
        : `state in Redis at ${redactUrl(config.redisUrl ?? '')}`,
    );
    return new RedisStore({
      client,
      subscriber,
      keys,
      timeoutMs: config.storeTimeoutMs,
      durability: config.durability,
    });
  }
  logger.warn(
    'SLUICE_REDIS_URL is not set: running on the embedded single-process store. ' +
      'State is not shared with other instances and is lost on restart.',
  );
  return new MemoryStore({ keys, clock });
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

export const storeProvider: Provider = {
  provide: STORE,
  inject: [SLUICE_CONFIG, MetricsService, STORE_CLOCK],
  useFactory: (config: SluiceConfig, metrics: MetricsService, clock: Clock): Store =>
    capNamespaces(instrumentStore(createStore(config, undefined, clock), metrics), config.maxNamespaces),
};
