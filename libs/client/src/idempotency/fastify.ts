import type { ServerResponse } from 'node:http';
import type { CoordinatorClient } from '../coordinator-client';
import { captureResponse } from './capture';
import { IdempotencyEngine, replayHeaders, storedBody, type IdempotencyOptions } from './engine';

/** The parts of a Fastify request and reply the hooks use. */
export interface FastifyLikeRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}
export interface FastifyLikeReply {
  raw: ServerResponse;
  code(status: number): FastifyLikeReply;
  header(name: string, value: string | string[]): FastifyLikeReply;
  send(payload?: unknown): FastifyLikeReply;
}

/** Route hooks: spread them into a route's options, or add them to an encapsulated plugin. */
export interface FastifyIdempotencyHooks {
  preHandler: (request: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<FastifyLikeReply | undefined>;
  onError: (request: FastifyLikeRequest, reply: FastifyLikeReply, error: unknown) => Promise<void>;
}

/**
 * Makes Fastify routes idempotent, as {@link expressIdempotency} does Express routes. The body is
 * parsed (and validated) before `preHandler`, so it is part of the fingerprint.
 *
 * @example
 * const idempotent = fastifyIdempotency(client, { required: true });
 * app.post('/orders', { ...idempotent }, async (request, reply) => reply.code(201).send(await createOrder(request.body)));
 */
export function fastifyIdempotency(
  client: CoordinatorClient,
  options: IdempotencyOptions = {},
): FastifyIdempotencyHooks {
  const engine = new IdempotencyEngine(client, options);
  return {
    preHandler: async (request, reply) => {
      const decision = await engine.decide(request);
      if (decision.action === 'pass') return undefined;
      if (decision.action === 'respond') {
        reply.code(decision.response.status);
        for (const [name, value] of Object.entries(replayHeaders(decision.response, decision.replayed))) {
          reply.header(name, value);
        }
        return reply.send(storedBody(decision.response));
      }
      captureResponse(reply.raw, decision.claim, engine);
      return undefined;
    },
    onError: async (request, _reply, error) => {
      if (engine.releases(error)) engine.claimOf(request)?.markNoSideEffect();
    },
  };
}
