import { applyDecorators } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import {
  ApiBearerAuth,
  ApiBody,
  ApiHeader,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  type ContentObject,
  type HeaderObject,
  type SchemaObject,
} from '@nestjs/swagger';
import type { ErrorCode } from '@sluice/protocol';
import type { RouteKind } from '../auth/route-kind';
import { BODY_LIMIT_BYTES } from '../http/body-limit';
import { dtoSchema } from './request-schemas';
import { componentRef as ref } from './schema-helpers';
import type { RESPONSE_SCHEMAS } from './schemas';

/** The bearer scheme's name in `components.securitySchemes`. */
export const BEARER_SCHEME = 'bearer';

/** A component schema: a response schema, or a request DTO (by class name). */
type ComponentName = keyof typeof RESPONSE_SCHEMAS | `${string}Dto`;

export interface SuccessDoc {
  status: number;
  description: string;
  /** The JSON body's schema; absent with `content` (another media type) or for no body. */
  schema?: ComponentName;
  content?: ContentObject;
  headers?: Record<string, HeaderObject>;
}

export interface ErrorDoc {
  status: number;
  code: ErrorCode;
  description: string;
  headers?: Record<string, HeaderObject>;
  /** The body's schema when it is more than ErrorBody. */
  schema?: ComponentName;
}

export interface RouteDoc {
  operationId: string;
  summary: string;
  description?: string;
  responses: SuccessDoc[];
  /** Errors this route answers besides those of its kind. */
  errors?: ErrorDoc[];
  /** Request headers the route reads. */
  headers?: Array<{ name: string; description: string; schema?: SchemaObject }>;
  /** The body may be left out (every field of its DTO is optional). */
  optionalBody?: boolean;
  /** False: the route never waits on the store before answering (no 503 store_unavailable). */
  store?: false;
}

// Response headers.

export const RETRY_AFTER: Record<string, HeaderObject> = {
  'Retry-After': {
    description: 'Seconds to wait, a whole number rounded up.',
    schema: { type: 'integer', minimum: 1 },
  },
};

export const ETAG: Record<string, HeaderObject> = {
  ETag: { description: 'The entity tag of the body, for `If-None-Match` / `If-Match`.', schema: { type: 'string' } },
};

// Errors, by what causes them.

/** A size limit as people write it: 64 KiB, 1 MiB. */
export const sizeOf = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`;

export const ERRORS = {
  validationFailed: {
    status: 400,
    code: 'validation_failed',
    description:
      'A path or query parameter, header or body field is invalid, a field the request does not take was sent, ' +
      'or the body is not a JSON object (malformed JSON included). `details` names every field at fault. ' +
      'Nothing was changed.',
  },
  unauthorized: {
    status: 401,
    code: 'unauthorized',
    description: 'No bearer token, or an unknown one.',
    headers: { 'WWW-Authenticate': { description: '`Bearer realm="sluice"`.', schema: { type: 'string' } } },
  },
  forbiddenNamespace: {
    status: 403,
    code: 'forbidden',
    description: 'The token\u2019s namespaces do not include `{ns}`.',
  },
  forbiddenAdmin: {
    status: 403,
    code: 'forbidden',
    description: 'Not an `admin` token, or its namespaces do not include the namespace asked about.',
  },
  bodyTooLarge: {
    status: 413,
    code: 'payload_too_large',
    description: `The request body is over ${sizeOf(BODY_LIMIT_BYTES)}.`,
  },
  notJson: {
    status: 415,
    code: 'validation_failed',
    description: 'The body is not `application/json` (`details` names `content-type`).',
  },
  storeUnavailable: {
    status: 503,
    code: 'store_unavailable',
    description: 'The store (Redis) did not answer within `SLUICE_STORE_TIMEOUT_MS`. Nothing was changed.',
    headers: RETRY_AFTER,
  },
  decisionStoreUnavailable: {
    status: 503,
    code: 'store_unavailable',
    description:
      'The store (Redis) did not answer within `SLUICE_STORE_TIMEOUT_MS`; the answer comes promptly, and ' +
      'SDKs then decide with their local fallback.',
    headers: RETRY_AFTER,
  },
  overloaded: {
    status: 503,
    code: 'overloaded',
    description:
      'This instance is past its capacity (`SLUICE_MAX_EVENT_LOOP_DELAY_MS`, `SLUICE_MAX_IN_FLIGHT`) and shed the ' +
      'request before doing any work: nothing was changed. Ask another instance, or this one after `Retry-After`.',
    headers: RETRY_AFTER,
  },
  tooManyNamespaces: {
    status: 422,
    code: 'too_many_namespaces',
    description:
      'The namespace would be new and the deployment already holds `SLUICE_MAX_NAMESPACES` (default 1000) ' +
      'namespaces with state; one unused for a day frees its place. `details` names `ns`.',
  },
} satisfies Record<string, ErrorDoc>;

export const notFound = (description: string): ErrorDoc => ({ status: 404, code: 'not_found', description });

/** The dependency would be new and its namespace is full; `field` is what `details` names. */
export const tooManyDependencies = (field = 'dep'): ErrorDoc => ({
  status: 422,
  code: 'too_many_dependencies',
  description:
    'The dependency would be new and the namespace already holds `SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE` ' +
    `(default 1000) distinct dependencies; one unused for a day frees its place. \`details\` names \`${field}\`.`,
});

const DECISION_NOTE = 'A decision that says no is not an error: the answer is 200 with `allow: false` and a `reason`.';

/**
 * The OpenAPI operation of a route of this kind: its parameters and body read from the handler's
 * parameter decorators, its answers, and the errors every route of its kind may answer. Applied by
 * the route decorators of http/routes.ts, which set the route's access and serializer with it.
 */
export function documentRoute(kind: RouteKind, doc: RouteDoc): MethodDecorator {
  return (target, key, descriptor) => {
    const args = routeArguments(target, key);
    const errors: ErrorDoc[] = [];
    if (kind !== 'public') {
      errors.push(ERRORS.validationFailed, ERRORS.unauthorized);
      errors.push(kind === 'admin' ? ERRORS.forbiddenAdmin : ERRORS.forbiddenNamespace);
      if (args.body) errors.push(ERRORS.bodyTooLarge, ERRORS.notJson);
    }
    errors.push(...(doc.errors ?? []));
    // A route that may register a dependency may register its namespace too.
    const codes = new Set(errors.map((error) => error.code));
    if (codes.has('too_many_dependencies') && !codes.has('too_many_namespaces')) errors.push(ERRORS.tooManyNamespaces);
    if (kind !== 'public' && doc.store !== false && !errors.some((error) => error.status === 503)) {
      errors.push(kind === 'decision' ? ERRORS.decisionStoreUnavailable : ERRORS.storeUnavailable);
    }
    if (kind === 'client' || kind === 'decision') errors.push(ERRORS.overloaded);
    const description =
      kind === 'decision' ? [doc.description, DECISION_NOTE].filter(Boolean).join('\n\n') : doc.description;
    const decorators: Array<MethodDecorator | ClassDecorator> = [
      ApiOperation({ operationId: doc.operationId, summary: doc.summary, ...(description ? { description } : {}) }),
      ...(kind === 'public' ? [] : [ApiBearerAuth(BEARER_SCHEME)]),
      ...args.params.map((parameter) => ApiParam({ ...parameter, required: true })),
      ...args.query.map((parameter) => ApiQuery(parameter)),
      ...(doc.headers ?? []).map((header) =>
        ApiHeader({
          name: header.name,
          description: header.description,
          required: false,
          schema: header.schema ?? { type: 'string' },
        }),
      ),
      ...(args.body ? [ApiBody({ schema: ref(args.body), required: !doc.optionalBody })] : []),
      ...doc.responses.map((response) =>
        ApiResponse({
          status: response.status,
          description: response.description,
          ...(response.schema ? { schema: ref(response.schema) } : {}),
          ...(response.content ? { content: response.content } : {}),
          ...(response.headers ? { headers: response.headers } : {}),
        }),
      ),
      ...mergeByStatus(errors).map((error) => ApiResponse(error)),
    ];
    return applyDecorators(...decorators)(target, key, descriptor);
  };
}

/** Errors sharing a status become one response listing each code. */
function mergeByStatus(errors: ErrorDoc[]) {
  const byStatus = new Map<number, ErrorDoc[]>();
  for (const error of errors) byStatus.set(error.status, [...(byStatus.get(error.status) ?? []), error]);
  return [...byStatus.entries()].map(([status, docs]) => {
    const lines = docs.map((doc) => `\`${doc.code}\`: ${doc.description}`);
    const schemas = [...new Set(docs.map((doc) => doc.schema ?? 'ErrorBody'))];
    return {
      status,
      description: lines.length === 1 ? lines[0] : lines.map((line) => `- ${line}`).join('\n'),
      schema: schemas.length === 1 ? ref(schemas[0]) : { oneOf: schemas.map(ref) },
      headers: Object.assign({}, ...docs.map((doc) => doc.headers ?? {})) as Record<string, HeaderObject>,
    };
  });
}

interface Parameter {
  name: string;
  description?: string;
  required: boolean;
  schema: SchemaObject;
}

/**
 * What the handler reads, from its Nest parameter decorators: `@Param()` and `@Query()` DTOs become
 * path and query parameters, and `@Body()` the request body, all with the DTOs' class-validator
 * rules. A route's documentation then cannot name a parameter its handler does not take.
 */
function routeArguments(
  target: object,
  key: string | symbol,
): { params: Parameter[]; query: Parameter[]; body?: string } {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, target.constructor, key) ?? {}) as Record<
    string,
    { index: number; data?: unknown }
  >;
  const types = (Reflect.getMetadata('design:paramtypes', target, key) ?? []) as Array<new () => object>;
  const result: { params: Parameter[]; query: Parameter[]; body?: string } = { params: [], query: [] };
  for (const [argKey, { index, data }] of Object.entries(args)) {
    const paramtype = Number(argKey.split(':')[0]);
    const type = types[index];
    if (paramtype === RouteParamtypes.BODY) result.body = type.name;
    if (paramtype === RouteParamtypes.PARAM) result.params.push(...parametersOf(type, data));
    if (paramtype === RouteParamtypes.QUERY) result.query.push(...parametersOf(type, data));
  }
  return result;
}

function parametersOf(type: new () => object, data: unknown): Parameter[] {
  if (typeof data === 'string') return [{ name: data, required: true, schema: { type: 'string' } }];
  const schema = dtoSchema(type);
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property as SchemaObject;
    return { name, required: required.has(name), schema: rest, ...(description ? { description } : {}) };
  });
}
