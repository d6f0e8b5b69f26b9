import { Transform, type Readable } from 'node:stream';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifyRequest } from 'fastify';
import type { ErrorDetail } from '@sluice/protocol';
import { createOpenApiDocument } from '../openapi/document';
import { validationFailed, type ApiError } from './api-error';
import { JsonShapeScanner, checkBodyShape, clip, fieldOf, nameOf } from './body-shape';

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
 */

/** Where a field is: its name in an error about the whole of it. */
type Place = 'path' | 'query' | 'body';

/** At most this many details in one 400 (ajv stops at the first error; a composite adds its own). */
const MAX_DETAILS = 5;

export interface RouteValidator {
  params?: ValidateFunction;
  body?: ValidateFunction;
  query?: ValidateFunction;
}

/** Validators by `METHOD /fastify/:route`. */
export type RequestValidators = ReadonlyMap<string, RouteValidator>;

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

const SCHEMA_REF = '#/components/schemas/';
const DEFINITIONS = 'sluice-requests';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options'] as const;

/** The validators of every operation with a JSON body or query parameters in `document`. */
export function compileRequestValidators(document: OpenAPIObject): RequestValidators {
  const ajv = new Ajv({
    allErrors: false,
    verbose: true,
    messages: false,
    strict: true,
    strictTypes: false,
    unicodeRegExp: false,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
  });
  const components = (document.components?.schemas ?? {}) as Record<string, SchemaObject | ReferenceObject>;
  const $defs: Record<string, object> = {};
  for (const [name, schema] of Object.entries(components)) $defs[name] = toJsonSchema(schema);
  ajv.addSchema({ $id: DEFINITIONS, $defs });

  const validators = new Map<string, RouteValidator>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const validator: RouteValidator = {};
      const body = bodySchemaOf(operation);
      if (body) validator.body = ajv.compile(toJsonSchema(body));
      const query = querySchemaOf(operation);
      if (query) validator.query = ajv.compile(query);
      const params = paramsSchemaOf(operation);
      if (params) validator.params = ajv.compile(params);
      if (validator.body || validator.query || validator.params) {
        validators.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, validator);
      }
    }
  }
  return validators;
}

function bodySchemaOf(operation: OperationObject): SchemaObject | ReferenceObject | undefined {
  const body = operation.requestBody;
  if (!body || '$ref' in body) return undefined;
  return body.content['application/json']?.schema;
}

/**
 * An object of the declared query parameters and no other; each present value a single string
 * (an array where the parameter's schema says so), checked against the parameter's string rules.
 */
function querySchemaOf(operation: OperationObject): object | undefined {
  const parameters = (operation.parameters ?? []).filter(
    (parameter): parameter is ParameterObject => !('$ref' in parameter) && parameter.in === 'query',
  );
  if (parameters.length === 0) return undefined;
  const properties: Record<string, object> = {};
  for (const parameter of parameters) {
    const schema = (parameter.schema ?? {}) as SchemaObject;
    properties[parameter.name] =
      schema.type === 'array'
        ? { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }
        : schema.type === 'string' || schema.type === undefined
          ? { ...pick(schema, STRING_KEYWORDS), type: 'string' }
          : { type: 'string' };
  }
  const required = parameters.filter((parameter) => parameter.required).map((parameter) => parameter.name);
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'enum'] as const;

/** The path parameters (decoded strings, as the router found them) within their string rules. */
function paramsSchemaOf(operation: OperationObject): object | undefined {
  const parameters = (operation.parameters ?? []).filter(
    (parameter): parameter is ParameterObject => !('$ref' in parameter) && parameter.in === 'path',
  );
  if (parameters.length === 0) return undefined;
  const properties = Object.fromEntries(
    parameters.map((parameter) => [
      parameter.name,
      { ...pick((parameter.schema ?? {}) as SchemaObject, STRING_KEYWORDS), type: 'string' },
    ]),
  );
  return { type: 'object', properties, required: parameters.map((parameter) => parameter.name) };
}

/** Keywords about a single value: on an item of an array of plain values, class-validator names the array. */
const VALUE_KEYWORD_LIST = [
  'type',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
] as const;
const VALUE_KEYWORDS: ReadonlySet<string> = new Set(VALUE_KEYWORD_LIST);

/** The JSON Schema keywords ajv checks; annotations and OpenAPI's own keywords (format, example) are left out. */
const CHECKED_KEYWORDS = [
  ...VALUE_KEYWORD_LIST,
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'required',
] as const;

function pick(schema: SchemaObject, keys: readonly string[]): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (schema as Record<string, unknown>)[key];
    if (value !== undefined) result[key] = value;
  }
  return result;
}

/**
 * An OpenAPI 3.0 schema as the JSON Schema ajv compiles: references into the shared definitions,
 * `nullable` as a `null` type, boolean exclusive bounds as numbers, and `additionalProperties:
 * false` on every object with declared properties that does not say otherwise.
 */
export function toJsonSchema(schema: SchemaObject | ReferenceObject): Record<string, unknown> {
  if ('$ref' in schema) {
    const name = schema.$ref.startsWith(SCHEMA_REF) ? schema.$ref.slice(SCHEMA_REF.length) : schema.$ref;
    return { $ref: `${DEFINITIONS}#/$defs/${name}` };
  }
  const result = pick(schema, CHECKED_KEYWORDS);
  const source = schema as SchemaObject & { exclusiveMinimum?: boolean | number; exclusiveMaximum?: boolean | number };
  if (typeof source.exclusiveMinimum === 'boolean') {
    delete result.exclusiveMinimum;
    if (source.exclusiveMinimum && source.minimum !== undefined) {
      result.exclusiveMinimum = source.minimum;
      delete result.minimum;
    }
  }
  if (typeof source.exclusiveMaximum === 'boolean') {
    delete result.exclusiveMaximum;
    if (source.exclusiveMaximum && source.maximum !== undefined) {
      result.exclusiveMaximum = source.maximum;
      delete result.maximum;
    }
  }
  if (schema.properties) {
    result.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => [name, toJsonSchema(property)]),
    );
    if (schema.additionalProperties === undefined) result.additionalProperties = false;
  }
  if (schema.additionalProperties !== undefined) {
    result.additionalProperties =
      typeof schema.additionalProperties === 'object'
        ? toJsonSchema(schema.additionalProperties)
        : schema.additionalProperties;
  }
  if (schema.items) result.items = toJsonSchema(schema.items);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    if (schema[key]) result[key] = schema[key].map(toJsonSchema);
  }
  if (schema.not) result.not = toJsonSchema(schema.not);
  return schema.nullable ? nullable(result) : result;
}

function nullable(schema: Record<string, unknown>): Record<string, unknown> {
  if (Object.keys(schema).length === 0) return schema;
  if (typeof schema.type === 'string') {
    const enumeration = Array.isArray(schema.enum) ? { enum: [...(schema.enum as unknown[]), null] } : {};
    return { ...schema, type: [schema.type, 'null'], ...enumeration };
  }
  return { if: { type: 'null' }, else: schema };
}

/** Details for ajv's errors: the composite's own error rather than its branches', none for `if`. */
export function detailsOf(errors: ErrorObject[] | null | undefined, place: Place): ErrorDetail[] {
  const kept: ErrorObject[] = [];
  for (const error of errors ?? []) {
    if (error.keyword === 'if') continue;
    if (error.keyword === 'oneOf' || error.keyword === 'anyOf') {
      const at = error.instancePath;
      for (let i = kept.length - 1; i >= 0; i--) {
        const path = kept[i].instancePath;
        if (path === at || path.startsWith(`${at}/`)) kept.splice(i, 1);
      }
    }
    kept.push(error);
  }
  const details = kept.slice(0, MAX_DETAILS).map((error) => detailOf(error, place));
  return details.length > 0 ? details : [{ field: place, message: `${place} is invalid` }];
}

/** JSON pointer segments of an ajv instancePath. */
const segmentsOf = (pointer: string): string[] =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

const INDEX = /^(?:0|[1-9]\d*)$/;

function detailOf(error: ErrorObject, place: Place): ErrorDetail {
  const segments = segmentsOf(error.instancePath);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty);
    return { field: fieldOf([...segments, name]), message: `property ${clip(name)} should not exist` };
  }
  if (error.keyword === 'required') {
    const name = String(params.missingProperty);
    return { field: fieldOf([...segments, name]), message: `${clip(name)} is required` };
  }
  if (place === 'query' && error.keyword === 'type' && Array.isArray(error.data)) {
    const name = segments[segments.length - 1] ?? place;
    return { field: fieldOf(segments), message: `${clip(name)} must be given once` };
  }
  const last = segments[segments.length - 1];
  const item = last !== undefined && INDEX.test(last) && segments.length > 1 && isPlainItemError(error);
  const at = item ? segments.slice(0, -1) : segments;
  // The DTOs' own message for a pattern, which names no property: `must match ^[a-z0-9]…$`.
  if (error.keyword === 'pattern' && !item) return { field: fieldOf(at), message: verbOf(error) };
  return {
    field: fieldOf(at),
    message: `${item ? `each value in ${nameOf(at, place)}` : nameOf(at, place)} ${verbOf(error)}`,
  };
}

/** A value error on an array item that is not itself an array or object (those keep their index). */
function isPlainItemError(error: ErrorObject): boolean {
  if (!VALUE_KEYWORDS.has(error.keyword)) return false;
  if (error.keyword !== 'type') return true;
  const expected = [(error.params as { type: unknown }).type].flat();
  return !expected.includes('object') && !expected.includes('array');
}

const TYPE_NAMES: Record<string, string> = {
  integer: 'an integer number',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean value',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const typeNames = (types: unknown): string =>
  [types]
    .flat()
    .map((type) => TYPE_NAMES[String(type)] ?? String(type))
    .join(' or ');

/** class-validator's wording for the same rule (`must not be greater than 100`). */
function verbOf(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'type':
      return `must be ${typeNames(params.type)}`;
    case 'minimum':
      return `must not be less than ${params.limit}`;
    case 'maximum':
      return `must not be greater than ${params.limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${params.limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${params.limit}`;
    case 'multipleOf':
      return `must be a multiple of ${params.multipleOf}`;
    case 'minLength':
      return `must be longer than or equal to ${params.limit} characters`;
    case 'maxLength':
      return `must be shorter than or equal to ${params.limit} characters`;
    case 'pattern':
      return `must match ${params.pattern}`;
    case 'enum':
      return `must be one of the following values: ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'minItems':
      return `must contain at least ${params.limit} elements`;
    case 'maxItems':
      return `must contain no more than ${params.limit} elements`;
    case 'uniqueItems':
      return 'must not contain duplicates';
    case 'minProperties':
      return `must have at least ${params.limit} properties`;
    case 'maxProperties':
      return `must have no more than ${params.limit} properties`;
    case 'oneOf':
    case 'anyOf':
      return alternativesOf(error.schema);
    case 'false schema':
    case 'not':
      return 'is not allowed here';
    default:
      return 'is invalid';
  }
}

/** `must be a string or an array`, from the branches' types. */
function alternativesOf(branches: unknown): string {
  const types = (Array.isArray(branches) ? branches : []).map((branch) => (branch as { type?: unknown }).type);
  if (types.length === 0 || types.some((type) => type === undefined)) return 'must match one of the allowed forms';
  return `must be ${typeNames(types.flat())}`;
}
