import 'reflect-metadata';
import { Logger, ShutdownSignal } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AppModule } from './app.module';
import { BODY_LIMIT_BYTES } from './common/body-limit';
import { sendError } from './common/http-error.filter';
import { checkJsonObjectBody } from './common/json-body';
import { installDirectRoutes } from './common/direct-routes';
import { installRequestValidation } from './common/request-validation';
import { createValidationPipe } from './common/validation.pipe';
import { isLoopbackHost, type SluiceConfig } from './config/config';
import { createLogger, NestPinoLogger } from './logging/logger';
import { MetricsService } from './metrics/metrics.service';
import { registerLoadShedding } from './overload/load-shedding';
import { setupOpenApi } from './openapi/document';
import { readPoliciesFile, type PoliciesFile } from './policies/policies-file';
import { setupConsole } from './web-console/serve-console';

export { BODY_LIMIT_BYTES };
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the coordinator app (not yet listening) from a validated configuration. */
export async function createCoordinator(config: SluiceConfig): Promise<NestFastifyApplication> {
  const policies: PoliciesFile = config.policiesFile ? readPoliciesFile(config.policiesFile) : { namespaces: {} };
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  // One pino instance for Fastify and Nest; a request's own logger (request.log) carries its reqId.
  const logger = createLogger(config.logLevel);
  const adapter = new FastifyAdapter({
    ...(config.tls ? { https: { cert: config.tls.cert, key: config.tls.key } } : {}),
    bodyLimit: BODY_LIMIT_BYTES,
    // Names may be 128 characters and idempotency keys 255: the pattern checks decide, not the router.
    maxParamLength: 512,
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) =>
      sendError(error, request, reply),
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: !verbose }),
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register({ config, policies }), adapter, {
    logger: new NestPinoLogger(logger),
    abortOnError: false,
    // Fastify's own JSON parser (the same secure-json-parse rules, parsed from a string): Nest's
    // re-registration reads every body as a buffer and parses it through a wrapper per request.
    bodyParser: false,
  });
  // SIGHUP reloads a tokens file (TokensFileReloader) instead of stopping the service.
  app.enableShutdownHooks(
    config.tokensFile ? Object.values(ShutdownSignal).filter((signal) => signal !== ShutdownSignal.SIGHUP) : undefined,
  );
  const fastify = app.getHttpAdapter().getInstance();
  const metrics = app.get(MetricsService);
  // Callback hooks here and below: no promise per request.
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  registerLoadShedding(app, config, metrics);
  fastify.addHook('preValidation', (request, _reply, done) => {
    try {
      checkJsonObjectBody(request);
      done();
    } catch (error) {
      done(error as Error);
    }
  });
  // Bodies' shape, then path, query and body against the document's schemas: linear time, before the pipe.
  const validators = installRequestValidation(app);
  // The decision routes: the same checks without Nest's per-request pipeline.
  installDirectRoutes(app, { validators, pipe: createValidationPipe() });
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequestDuration
      .child(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode)
      .observe(reply.elapsedTime / 1000);
    done();
  });
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
