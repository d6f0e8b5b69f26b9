import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { BODY_LIMIT_BYTES } from './body-limit';
import { sendError } from './error-writer';
import type { SluiceConfig } from '../config/config';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The Fastify server under the app: the body limit, the router's parameter length, the request id
 * (the caller's `X-Request-Id` when it is well formed, a new UUID otherwise), the shared logger,
 * the API's error body for what Fastify refuses before any route runs, and TLS when configured.
 */
export function createHttpAdapter(logger: Logger, verbose: boolean, tls?: SluiceConfig['tls']): FastifyAdapter {
  return new FastifyAdapter({
    // With a certificate and key, HTTPS only.
    ...(tls ? { https: { cert: tls.cert, key: tls.key } } : {}),
    bodyLimit: BODY_LIMIT_BYTES,
    // Names may be 128 characters and idempotency keys 255: the pattern checks decide, not the router.
    routerOptions: { maxParamLength: 512 },
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
}
