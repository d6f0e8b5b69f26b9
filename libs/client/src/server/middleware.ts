import type { Clock } from '@sluice/core';
import { NO_RETRY_HEADER, contextFromHeaders, runWithContext, type IncomingHeaders } from '../context/request-context';

/**
 * Options of the server middlewares.
 * @example
 * app.use(sluiceExpress({ pushback: false }));
 */
export interface SluiceMiddlewareOptions {
  /** The clock deadlines are measured on (tests inject a manual one). */
  clock?: Clock;
  /** Set `sluice-no-retry` on the response when an SDK call made while serving it gave up (default true). */
  pushback?: boolean;
}

/**
 * A response as Node's `http.ServerResponse` (and so Express) exposes it.
 * @example
 * const res: NodeResponseLike = expressResponse;
 */
export interface NodeResponseLike {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
}

/**
 * A request as Node and Express expose it.
 * @example
 * const req: NodeRequestLike = { headers: { 'sluice-deadline-ms': '500' } };
 */
export interface NodeRequestLike {
  headers: IncomingHeaders;
}

/**
 * Express (4 or 5) middleware: reads `sluice-deadline-ms` and `sluice-attempt` into the request
 * context that SDK calls made while serving the request use. Mount it after body parsers.
 * @example
 * import express from 'express';
 * import { sluiceExpress } from '@sluice/client';
 * const app = express();
 * app.use(express.json());
 * app.use(sluiceExpress());
 */
export function sluiceExpress(
  options: SluiceMiddlewareOptions = {},
): (req: NodeRequestLike, res: NodeResponseLike, next: () => void) => void {
  return (req, res, next) => runWithIncomingRequest(req, res, next, options);
}

/**
 * Runs `handler` in the context of a plain `node:http` request.
 * @example
 * http.createServer((req, res) => runWithIncomingRequest(req, res, () => handle(req, res)));
 */
export function runWithIncomingRequest<T>(
  req: NodeRequestLike,
  res: NodeResponseLike,
  handler: () => T,
  options: SluiceMiddlewareOptions = {},
): T {
  const pushback =
    options.pushback === false
      ? undefined
      : (reason: string) => {
          if (!res.headersSent) res.setHeader(NO_RETRY_HEADER, reason);
        };
  return runWithContext(contextFromHeaders(req.headers, { clock: options.clock, pushback }), handler);
}

/**
 * The parts of a Fastify reply the hook uses.
 * @example
 * const reply: FastifyReplyLike = fastifyReply;
 */
export interface FastifyReplyLike {
  readonly sent: boolean;
  header(name: string, value: string): unknown;
}

/**
 * The parts of a Fastify instance the plugin uses.
 * @example
 * sluiceFastify(fastify as FastifyInstanceLike, {}, () => undefined);
 */
export interface FastifyInstanceLike {
  addHook(
    name: 'preHandler',
    hook: (request: NodeRequestLike, reply: FastifyReplyLike, done: (error?: Error) => void) => void,
  ): unknown;
}

/**
 * A Fastify `preHandler` hook putting the Sluice request context around the route handler (after
 * the body is parsed, so the context survives body parsing).
 * @example
 * fastify.addHook('preHandler', sluiceFastifyHook());
 */
export function sluiceFastifyHook(
  options: SluiceMiddlewareOptions = {},
): (request: NodeRequestLike, reply: FastifyReplyLike, done: (error?: Error) => void) => void {
  return (request, reply, done) => {
    const pushback =
      options.pushback === false
        ? undefined
        : (reason: string) => {
            if (!reply.sent) reply.header(NO_RETRY_HEADER, reason);
          };
    runWithContext(contextFromHeaders(request.headers, { clock: options.clock, pushback }), () => done());
  };
}

/**
 * A Fastify plugin registering {@link sluiceFastifyHook} for every route (it is not encapsulated).
 * @example
 * await fastify.register(sluiceFastify, { pushback: true });
 */
export function sluiceFastify(
  fastify: FastifyInstanceLike,
  options: SluiceMiddlewareOptions,
  done: (error?: Error) => void,
): void {
  fastify.addHook('preHandler', sluiceFastifyHook(options));
  done();
}
// Fastify's marker for a plugin whose hooks apply outside its own scope (what fastify-plugin sets).
Object.assign(sluiceFastify, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'sluice',
});
