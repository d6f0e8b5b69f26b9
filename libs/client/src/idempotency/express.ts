import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StoredResponse } from '@sluice/protocol';
import type { CoordinatorClient } from '../coordinator-client';
import { captureResponse } from './capture';
import { IdempotencyEngine, replayHeaders, storedBody, type IdempotencyOptions } from './engine';

type Next = (error?: unknown) => void;
type ExpressLikeRequest = IncomingMessage & { body?: unknown; originalUrl?: string };

/** An Express (or Connect, or plain `node:http`) middleware, with an error middleware beside it. */
export interface ExpressIdempotency {
  (request: ExpressLikeRequest, response: ServerResponse, next: Next): void;
  /**
   * An error middleware that releases the claim when the error says it came before any side
   * effect; mount it before the app's own error handler.
   */
  errors: (error: unknown, request: ExpressLikeRequest, response: ServerResponse, next: Next) => void;
}

/**
 * Makes Express routes idempotent: reads `Idempotency-Key`, claims it at the coordinator, runs the
 * route, stores its response; a retry gets that response again with `Idempotent-Replayed: true`.
 * Mount it after the body parser, so the body is part of the fingerprint.
 *
 * @example
 * const idempotent = expressIdempotency(client, { required: true, identify: (req) => req.headers['x-user-id'] as string });
 * app.post('/orders', express.json(), idempotent, createOrder);
 * app.use(idempotent.errors);
 */
export function expressIdempotency(client: CoordinatorClient, options: IdempotencyOptions = {}): ExpressIdempotency {
  const engine = new IdempotencyEngine(client, options);
  const middleware = ((request, response, next) => {
    engine.decide(request).then((decision) => {
      if (decision.action === 'pass') return next();
      if (decision.action === 'respond') return writeStoredResponse(response, decision.response, decision.replayed);
      captureResponse(response, decision.claim, engine);
      next();
    }, next);
  }) as ExpressIdempotency;
  middleware.errors = (error, request, _response, next) => {
    if (engine.releases(error)) engine.claimOf(request)?.markNoSideEffect();
    next(error);
  };
  return middleware;
}

/** Sends a stored response on a Node response, byte for byte. */
export function writeStoredResponse(response: ServerResponse, stored: StoredResponse, replayed: boolean): void {
  const body = storedBody(stored);
  response.statusCode = stored.status;
  for (const [name, value] of Object.entries(replayHeaders(stored, replayed))) response.setHeader(name, value);
  response.setHeader('content-length', body.length);
  response.end(body);
}
