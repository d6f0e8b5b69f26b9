import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Redis } from 'ioredis';
import type { Clock } from '@sluice/core';
import type { SluiceConfig } from '../../apps/coordinator/src/config/config';
import { createCoordinator } from '../../apps/coordinator/src/bootstrap';
import { testConfig } from './coordinator';
import { writePoliciesFile } from './policies';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from './redis';
import { waitUntil } from './time';

export interface FixtureOptions {
  /**
   * Where the state lives: the embedded store (default); `true` for the shared Redis under a fresh
   * key prefix (its keys are deleted by `close()`); or the URL of a private Redis (a
   * `RedisServerProcess`), whose keys are the server's own business (the shared Redis's URL counts as `true`).
   */
  redis?: boolean | string;
  /** A policies document, written to a temporary SLUICE_POLICIES_FILE (removed by `close()`). */
  policies?: object;
  /** Listens on a loopback port (for SDK clients, `fetch`, SSE); otherwise in-process for supertest. */
  listen?: boolean;
  /** How many instances share the store: a fleet (instances of one embedded store share nothing). */
  instances?: number;
  /** Names the key prefix, e.g. `t:<label>:1f3a9c0b`. */
  label?: string;
  /** Configuration overrides (tokens, timeouts, caps, a Cluster's nodes, …). */
  config?: Partial<SluiceConfig>;
  /** The embedded store's clock (a ManualClock the test moves); Redis keeps its own. */
  storeClock?: Clock;
}

/** One coordinator of a fixture. */
export interface TestInstance {
  app: NestFastifyApplication;
  /** The HTTP server, for supertest. */
  server: ReturnType<NestFastifyApplication['getHttpServer']>;
  /** Base URL (e.g. http://127.0.0.1:41234) when listening; an in-process app has none. */
  url: string;
  /** Closes this instance alone (idempotent); the fixture's `close()` closes the rest. */
  close(): Promise<void>;
}

/** A coordinator (or a fleet of them on one store) and everything it needs, torn down by one `close()`. */
export interface TestCoordinator extends TestInstance {
  /** Every instance, the first being the fixture's own `app`, `server` and `url`. */
  instances: TestInstance[];
  /** The store's key prefix (fresh for every fixture). */
  keyPrefix: string;
  /** The policies file's path, when `policies` was given. */
  policiesFile?: string;
  /** The configuration every instance got. */
  config: Partial<SluiceConfig>;
  /** Starts one more instance on the same store and configuration; `close()` closes it too. */
  addInstance(): Promise<TestInstance>;
  /**
   * Waits until the store's clock (Redis's TIME, or this process's for the embedded store) is past
   * `instant` (epoch ms): the scripts decide on that clock, so an open duration or a lease is over
   * for them only then.
   */
  waitPast(instant: number): Promise<void>;
  /** A Redis client on the fixture's Redis (opened once; `close()` disconnects it). */
  redisClient(): Redis;
  /** Runs `cleanup` at `close()`, after the instances are closed and before the keys are deleted. */
  onClose(cleanup: () => unknown): void;
  /** Closes every instance, runs the `onClose` cleanups, deletes the keys and removes the policies file. */
  close(): Promise<void>;
}

/**
 * The one app fixture of the e2e tests: a coordinator in process (supertest) or listening, alone or
 * a fleet on one store, on the embedded store, the shared Redis (a fresh key prefix) or a private
 * Redis, with a policies file. `close()` tears all of it down, even when a step of it fails.
 */
export async function testCoordinator(options: FixtureOptions = {}): Promise<TestCoordinator> {
  const redisUrl = options.redis === true ? SHARED_REDIS_URL : options.redis || undefined;
  // A prefix the caller chose is the caller's to clean up; a fresh one is the fixture's.
  const ownPrefix = options.config?.keyPrefix === undefined;
  const keyPrefix = options.config?.keyPrefix ?? uniquePrefix(options.label ?? 'e2e');
  const policies = options.policies === undefined ? undefined : writePoliciesFile(options.policies);
  const config: Partial<SluiceConfig> = {
    keyPrefix,
    storeTimeoutMs: 2000,
    ...(redisUrl === undefined ? {} : { redisUrl }),
    ...(policies === undefined ? {} : { policiesFile: policies.path }),
    ...options.config,
  };
  // Any node of a Cluster tells Redis's time.
  const firstNode = config.redisClusterNodes?.[0];
  const clockUrl = redisUrl ?? (firstNode === undefined ? undefined : `redis://${firstNode}`);
  let clock: Redis | undefined;
  const clockClient = (): Redis => (clock ??= new Redis(clockUrl!, { protocol: 2 }));
  const instances: TestInstance[] = [];
  const cleanups: Array<() => unknown> = [];
  let client: Redis | undefined;

  const start = async (): Promise<TestInstance> => {
    const instance = await startInstance(config, options.listen ?? false, options.storeClock);
    instances.push(instance);
    return instance;
  };

  const close = async (): Promise<void> => {
    const errors: unknown[] = [];
    const attempt = async (step: () => unknown) => {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    };
    await Promise.all(instances.map((instance) => attempt(() => instance.close())));
    for (const cleanup of cleanups.splice(0).reverse()) await attempt(cleanup);
    if (redisUrl === SHARED_REDIS_URL && ownPrefix) {
      await attempt(async () => {
        const redis = new Redis(SHARED_REDIS_URL, { protocol: 2 });
        try {
          await deleteKeysWithPrefix(redis, `${keyPrefix}:`);
        } finally {
          redis.disconnect();
        }
      });
    }
    client?.disconnect();
    client = undefined;
    clock?.disconnect();
    clock = undefined;
    policies?.cleanup();
    if (errors.length > 0) throw errors[0];
  };

  const redisClientOf = (): Redis => {
    if (redisUrl === undefined) throw new Error('this fixture runs on the embedded store: it has no Redis');
    client ??= new Redis(redisUrl, { protocol: 2 });
    return client;
  };

  try {
    await Promise.all(Array.from({ length: Math.max(1, options.instances ?? 1) }, start));
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  const [first] = instances;
  return {
    app: first.app,
    server: first.server,
    url: first.url,
    instances,
    keyPrefix,
    policiesFile: policies?.path,
    config,
    addInstance: start,
    redisClient: redisClientOf,
    onClose: (cleanup) => cleanups.push(cleanup),
    waitPast: (instant) =>
      waitUntil(
        async () => (clockUrl === undefined ? Date.now() : await redisTimeMs(clockClient())) > instant,
        10_000,
        () => `the store's clock never passed ${instant}`,
        10,
      ),
    close,
  };
}

/** Redis's clock (TIME), in epoch ms. */
export async function redisTimeMs(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

async function startInstance(
  config: Partial<SluiceConfig>,
  listen: boolean,
  storeClock?: Clock,
): Promise<TestInstance> {
  const app = await createCoordinator(testConfig(config), undefined, { storeClock });
  let url = '';
  if (listen) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  } else {
    await app.getHttpAdapter().getInstance().ready();
  }
  let closed: Promise<void> | undefined;
  return { app, server: app.getHttpServer(), url, close: () => (closed ??= app.close()) };
}
