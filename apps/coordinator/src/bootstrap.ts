import 'reflect-metadata';
import { Logger, ShutdownSignal } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Clock } from '@sluice/core';
import { AppModule } from './app.module';
import { BODY_LIMIT_BYTES } from './http/body-limit';
import { createHttpAdapter } from './http/adapter';
import { installHttpEdge } from './http/edge';
import { isLoopbackHost, type SluiceConfig } from './config/config';
import { createLogger, NestPinoLogger } from './logging/logger';
import { MetricsService } from './metrics/metrics.service';
import { setupOpenApi } from './openapi/document';
import { readPoliciesFile, type PoliciesFile } from './policies/policies-file';
import { setupConsole } from './web-console/serve-console';

export { BODY_LIMIT_BYTES };

/** What a test may give a coordinator beside its configuration. */
export interface CoordinatorOptions {
  /** The embedded store's clock (a test's fake clock); the system's by default. */
  storeClock?: Clock;
}

/**
 * Builds the coordinator app (not yet listening) from a validated configuration; `policies` is the
 * policies file already read (read here when not given).
 */
export async function createCoordinator(
  config: SluiceConfig,
  policies: PoliciesFile = config.policiesFile ? readPoliciesFile(config.policiesFile) : { namespaces: {} },
  options: CoordinatorOptions = {},
): Promise<NestFastifyApplication> {
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  // One pino instance for Fastify and Nest; a request's own logger (request.log) carries its reqId.
  const logger = createLogger(config.logLevel, config.logFormat);
  const adapter = createHttpAdapter(logger, verbose, config.tls);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register({ config, policies, ...options }),
    adapter,
    {
      logger: new NestPinoLogger(logger),
      abortOnError: false,
      // Fastify's own JSON parser (the same secure-json-parse rules, parsed from a string): Nest's
      // re-registration reads every body as a buffer and parses it through a wrapper per request.
      bodyParser: false,
    },
  );
  // SIGHUP reloads a tokens file (TokensFileReloader) instead of stopping the service.
  app.enableShutdownHooks(
    config.tokensFile ? Object.values(ShutdownSignal).filter((signal) => signal !== ShutdownSignal.SIGHUP) : undefined,
  );
  installHttpEdge(app, config, app.get(MetricsService));
  setupOpenApi(app);
  await setupConsole(app);
  await app.init();
  return app;
}

/** The address to listen on: with no tokens, loopback only, whatever SLUICE_HOST says. */
export function listenHost(config: SluiceConfig, logger = new Logger('Auth')): string {
  if (config.tokens.length > 0) return config.host;
  const host = isLoopbackHost(config.host) ? config.host : '127.0.0.1';
  logger.warn(
    `AUTHENTICATION IS OFF: no SLUICE_TOKENS or SLUICE_TOKENS_FILE configured, so every caller is an admin. ` +
      `Listening on ${host} (loopback) only${host !== config.host ? `, not on ${config.host}` : ''}.`,
  );
  return host;
}
