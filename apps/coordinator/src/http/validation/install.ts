import { Transform, type Readable } from 'node:stream';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { validationFailed, type ApiError } from '../../common/api-error';
import { createOpenApiDocument } from '../../openapi/document';
import { JsonShapeScanner, checkBodyShape } from '../body-shape';
import { compileRequestValidators, type RequestValidators, type RouteValidator } from './compile';
import { detailsOf } from './wording';

/**
 * Request validation in linear time, before Nest's pipe or class-transformer sees the request:
 *
 * 1. The shape of every JSON body (body-shape.ts: depth, keys per object, items per array), in
 *    Fastify hooks, with the other checks of the body as such (415, malformed JSON, 413): as text
 *    while it arrives when it is large (preParsing, so JSON.parse never sees a body over a limit),
 *    and once parsed (preValidation).
 * 2. The body and the query string against their route's schemas, compiled once with ajv from the
 *    OpenAPI document (whose request schemas are derived from the DTOs' class-validator rules, so
 *    a field added to a DTO is checked here too), stopping at the first error. An object with
 *    declared properties takes no other (`additionalProperties: false`); a map such as a stored
 *    response's `headers` keeps the rule the document gives it; a query parameter is one string,
 *    within its string rules. This runs in a global guard, keyed by the matched route: after
 *    the guard, so a token that does not cover the request still gets its 401 or 403 first, and
 *    before the pipes.
 *
 * A 400 names one field (a composite's branches count as one), cut to MAX_FIELD_LENGTH: a body of
 * 20,000 unknown keys is one `body must have no more than 16384 properties`, of 10,000 one
 * `property k0 should not exist`. Fields are named as class-validator names them (`attempt`,
 * `deps.0.requests`, `asks.3.dep`; a bad item of an array of numbers names the array), in
 * class-validator's wording. The pipe stays behind this for the rules the document cannot state
 * (`slow` at most `successes + failures`, header names).
 *
 * One difference from the pipe, on purpose: `null` is accepted only where the document says
 * `nullable`. The pipe's `@IsOptional()` let `null` through as if absent (a trip with
 * `durationSeconds: null` ended at once, a policy stored `mode: null`).
 *
 * This file installs the checks and runs them; compile.ts turns the document into validators and
 * wording.ts words ajv's errors as class-validator would.
 */

/** The document depends on the code alone (the decorators), so one compile serves every app of a process. */
let compiled: RequestValidators | undefined;

/**
 * Adds the shape checks (preParsing and preValidation hooks) and the schema checks (a global
 * guard); returns the compiled validators. Call it after checkJsonObjectBody's preValidation hook (415 for another content
 * type, 400 for a body that is not an object), so that one runs first.
 */
export function installRequestValidation(app: NestFastifyApplication): RequestValidators {
  compiled ??= compileRequestValidators(createOpenApiDocument(app));
  const fastify = app.getHttpAdapter().getInstance();
  // Callback hooks: no promise per request on the decision routes.
  fastify.addHook('preParsing', (request, _reply, payload, done) => done(null, scanLargeJsonBody(request, payload)));
  fastify.addHook('preValidation', (request, _reply, done) => done(shapeError(request)));
  app.useGlobalGuards(new RequestSchemaGuard(compiled));
  return compiled;
}

/**
 * Runs the compiled schemas of the matched route after the auth guard (a global guard added after
 * the app's own, so it runs after it) and before the pipes. A guard, not an interceptor: no
 * Observable per request on the decision routes.
 */
class RequestSchemaGuard implements CanActivate {
  constructor(private readonly validators: RequestValidators) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() === 'http') validateRequest(this.validators, context.switchToHttp().getRequest());
    return true;
  }
}

/** Bodies up to this size are parsed as they are (too small for JSON.parse to be slow), then scanned. */
export const TEXT_SCAN_MIN_BYTES = 16 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * The payload stream, through a JsonShapeScanner when it is JSON of more than TEXT_SCAN_MIN_BYTES
 * (or of no stated length): the first limit passed ends the stream with the API's 400, and the
 * parser never sees the body.
 */
export function scanLargeJsonBody<S extends Readable>(request: FastifyRequest, payload: S): S | Transform {
  if (!JSON_TYPE.test(request.headers['content-type'] ?? '')) return payload;
  if (Number(request.headers['content-length']) <= TEXT_SCAN_MIN_BYTES) return payload;
  const scanner = new JsonShapeScanner();
  const scanned = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const problem = scanner.write(chunk);
      if (problem) callback(validationFailed([problem]));
      else callback(null, chunk);
    },
  });
  payload.on('error', (error) => scanned.destroy(error));
  payload.once('close', () => {
    if (!payload.readableEnded) scanned.destroy(new Error('the request was aborted'));
  });
  return payload.pipe(scanned);
}

/** The API's 400 when the parsed body of a matched route breaks a shape limit, or undefined. */
export function shapeError(request: FastifyRequest): ApiError | undefined {
  if (request.routeOptions.url === undefined || request.body === undefined) return undefined;
  const problem = checkBodyShape(request.body);
  return problem ? validationFailed([problem]) : undefined;
}

/**
 * Throws the API's 400 for the first field its route's schemas refuse: in the path, then the query
 * string, then the body (the pipe's order for a handler taking them in that order).
 */
export function validateRequest(validators: RequestValidators, request: FastifyRequest): void {
  const route = request.routeOptions.url;
  if (route === undefined) return;
  validateAgainst(validators.get(`${request.method === 'HEAD' ? 'GET' : request.method} ${route}`), request);
}

/** {@link validateRequest} with the route's validator already found (a route that knows it at boot). */
export function validateAgainst(validator: RouteValidator | undefined, request: FastifyRequest): void {
  if (!validator) return;
  if (validator.params && !validator.params(request.params)) {
    throw validationFailed(detailsOf(validator.params.errors, 'path'));
  }
  if (validator.query && request.query !== undefined && !validator.query(request.query)) {
    throw validationFailed(detailsOf(validator.query.errors, 'query'));
  }
  if (validator.body && request.body !== undefined && !validator.body(request.body)) {
    throw validationFailed(detailsOf(validator.body.errors, 'body'));
  }
}
