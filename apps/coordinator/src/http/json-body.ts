import type { FastifyRequest } from 'fastify';
import { ApiError, validationFailed } from '../common/api-error';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Every request body is a JSON object: another content type is a 415 and a JSON array, string,
 * number or null is a 400 naming `body`, before any DTO sees it.
 */
export function checkJsonObjectBody(request: FastifyRequest): void {
  if (request.body === undefined) return;
  if (!JSON_TYPE.test(request.headers['content-type'] ?? '')) {
    const message = 'must be application/json';
    throw new ApiError(415, 'validation_failed', message, [{ field: 'content-type', message }]);
  }
  const { body } = request;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationFailed([{ field: 'body', message: 'must be a JSON object' }]);
  }
}
