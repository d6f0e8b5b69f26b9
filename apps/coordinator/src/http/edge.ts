import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { SluiceConfig } from '../config/config';
import type { MetricsService } from '../metrics/metrics.service';
import { installDirectRoutes } from './direct-routes';
import { checkJsonObjectBody } from './json-body';
import { registerLoadShedding } from './load-shedding';
import { checkRouteKinds } from './route-kinds';
import { installRequestValidation } from './validation/install';
import { createValidationPipe } from './validation/pipe';

/**
 * Every hook of the HTTP edge, in the order a request meets them (README.md in this folder follows
 * one request through them). Call before `app.init()`, which registers the routes.
 */
export function installHttpEdge(
  app: NestFastifyApplication,
  config: Pick<SluiceConfig, 'maxEventLoopDelayMs' | 'maxInFlight'>,
  metrics: MetricsService,
): void {
  checkRouteKinds(app);
  const fastify = app.getHttpAdapter().getInstance();
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
}
