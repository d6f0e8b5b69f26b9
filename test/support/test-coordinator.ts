import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import type { SluiceConfig } from '../../apps/coordinator/src/config/config';
import { createTestCoordinator } from './coordinator';
import { writePoliciesFile } from './policies';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from './redis';

export interface TestCoordinator {
  app: NestFastifyApplication;
  server: ReturnType<NestFastifyApplication['getHttpServer']>;
  /** Closes the app, deletes its keys from the shared Redis and its policies file. */
  close(): Promise<void>;
}

/** A coordinator for supertest on the embedded store or the shared Redis (a fresh key prefix), with `policies`. */
export async function createCoordinatorOn(
  useRedis: boolean,
  policies: object,
  overrides: Partial<SluiceConfig> = {},
): Promise<TestCoordinator> {
  const keyPrefix = uniquePrefix('e2e');
  const policiesFile = writePoliciesFile(policies);
  const app = await createTestCoordinator({
    redisUrl: useRedis ? SHARED_REDIS_URL : undefined,
    keyPrefix,
    policiesFile: policiesFile.path,
    storeTimeoutMs: 2000,
    ...overrides,
  });
  return {
    app,
    server: app.getHttpServer(),
    close: async () => {
      await app.close();
      policiesFile.cleanup();
      if (useRedis) {
        const client = new Redis(SHARED_REDIS_URL, { protocol: 2 });
        await deleteKeysWithPrefix(client, keyPrefix);
        client.disconnect();
      }
    },
  };
}
