import type { INestApplication } from '@nestjs/common';
import {
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
  type OperationObject,
  type ParameterObject,
  type PathItemObject,
  type ReferenceObject,
  type ResponseObject,
  type SchemaObject,
} from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_PATTERN, RESOURCE_NAME_PATTERN } from '@sluice/protocol';
import { BODY_LIMIT_BYTES } from '../http/body-limit';
import { BODY_LIMITS } from '../http/body-shape';
import { requestSchemas } from './request-schemas';
import { BEARER_SCHEME, sizeOf } from './route-docs';
import { RESPONSE_SCHEMAS } from './schemas';
import { TAGS } from './tags';

/** The Swagger UI; the document itself is at `/docs-json`. Both are public, like /metrics. */
export const DOCS_PATH = '/docs';
export const DOCUMENT_PATH = '/docs-json';

const DESCRIPTION = `
Fleet-wide retry and overload coordination: retry budgets, circuit breakers, rate and concurrency
limits, idempotency keys and delivery attempts, shared by every instance of every client service.

**Authentication.** \`Authorization: Bearer <secret>\`. \`/v1\` takes \`client\` or \`admin\` tokens,
\`/admin/v1\` only \`admin\` tokens; a token is limited to its namespaces. Missing or unknown token → 401,
a token that does not cover the request → 403. \`/metrics\`, \`/health/*\`, \`/docs\` and \`/docs-json\`
need no token. When the service runs with no tokens configured, authentication is off and it listens on
loopback only.

**Errors.** Every 4xx and 5xx carries \`ErrorBody\` (\`statusCode\`, \`code\`, \`message\`, and \`details\`
naming each field at fault). Bad input never yields a 5xx and never changes state. An unknown path or
method is 404 \`not_found\`; an over-long URL 414 \`validation_failed\`. Request bodies are JSON objects
of at most ${sizeOf(BODY_LIMIT_BYTES)}: another content type is 415, a larger body 413 \`payload_too_large\`,
a field a route does not take 400, and so is a body nested deeper than ${BODY_LIMITS.maxDepth} levels (the body is
level 1) or with more than ${BODY_LIMITS.maxProperties} properties in an object or ${BODY_LIMITS.maxItems} items in an
array. \`null\` is a value only where a schema says \`nullable\`. \`Retry-After\` headers are whole seconds, rounded up.

**Names.** \`{ns}\`, \`{dep}\`, \`{limit}\` and \`{queue}\` match \`${RESOURCE_NAME_PATTERN.source}\`; an
idempotency \`{key}\` and a message id match \`${IDEMPOTENCY_KEY_PATTERN.source}\`. A dependency, limit or
queue never seen before is not an error: its state reads as empty, under the default policy.

**Units.** Durations are integers in milliseconds (\`…Ms\`) or seconds (\`…Seconds\`); instants (\`…At\`,
\`since\`, \`openUntil\`) are epoch milliseconds.

**Shadow mode.** A policy with \`mode: shadow\` decides as usual but does not enforce: decisions answer
\`allow: true\` with the \`reason\` enforcement would have given and \`shadow: true\`, and the denials are
counted in \`sluice_shadow_denials_total\`. \`not_retriable\` and \`not_idempotent\` are facts about the
call, not policy: they are enforced even in shadow mode (\`allow: false\`, \`shadow: false\`).

**Tracing.** Every response carries \`x-request-id\`: the request's own \`x-request-id\` when it sent
a valid one, otherwise a new UUID.

**Between services** (read by the SDKs, not by this service): \`sluice-deadline-ms\` carries the remaining
deadline, \`sluice-attempt\` the attempt number of the call, \`Idempotency-Key\` the key the SDK's
server-side middleware reads.
`.trim();

/** Serves the Swagger UI at /docs and the document at /docs-json (built on first request). */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup(DOCS_PATH.slice(1), app, () => createOpenApiDocument(app), {
    raw: ['json'],
    jsonDocumentUrl: DOCUMENT_PATH.slice(1),
    customSiteTitle: 'Sluice API',
  });
}

/**
 * The OpenAPI document of every route the app serves: the operations from the route decorators
 * (openapi/route-docs.ts), the request schemas from the DTOs' class-validator rules, the response
 * schemas from openapi/schemas.ts; keys sorted, so the document is the same for the same code.
 */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.0.3')
    .setTitle('Sluice')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addSecurity(BEARER_SCHEME, {
      type: 'http',
      scheme: 'bearer',
      description:
        'An opaque secret from `SLUICE_TOKENS` / `SLUICE_TOKENS_FILE`: role `client` (the `/v1` API of its ' +
        'namespaces) or `admin` (everything within its namespaces; `*` is every namespace).',
    });
  for (const tag of Object.values(TAGS)) config.addTag(tag.name, tag.description);
  const document = SwaggerModule.createDocument(app, config.build(), { autoTagControllers: false });

  for (const [path, item] of Object.entries(document.paths)) {
    for (const operation of operationsOf(item)) {
      // No bearer requirement: a public route (health, metrics), which needs no token at all.
      operation.security ??= [];
      operation.parameters?.sort(byPlace(path));
      for (const response of Object.values(operation.responses) as ResponseObject[]) {
        if (response.headers && Object.keys(response.headers).length === 0) delete response.headers;
      }
    }
  }
  delete document.info.contact;
  if (document.servers?.length === 0) delete document.servers;
  document.components = { ...document.components, schemas: componentSchemas(document) };
  checkReferences(document);
  return sortKeys(document);
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

function operationsOf(item: PathItemObject): OperationObject[] {
  return METHODS.flatMap((method) => item[method] ?? []);
}

const PLACES = ['path', 'query', 'header'];

/** Path parameters in the order of the path, then the query string, then headers. */
function byPlace(path: string) {
  const rank = (parameter: ParameterObject | ReferenceObject) => {
    if ('$ref' in parameter) return Number.MAX_SAFE_INTEGER;
    const place = PLACES.indexOf(parameter.in) * 10_000;
    return parameter.in === 'path' ? place + path.indexOf(`{${parameter.name}}`) : place;
  };
  return (a: ParameterObject | ReferenceObject, b: ParameterObject | ReferenceObject) => rank(a) - rank(b);
}

/** The response schemas, and the request schemas the document refers to (with their nested ones). */
function componentSchemas(document: OpenAPIObject): Record<string, SchemaObject> {
  const requests = requestSchemas();
  const schemas: Record<string, SchemaObject> = { ...RESPONSE_SCHEMAS };
  const pending = [...referencedSchemas(document.paths), ...referencedSchemas(RESPONSE_SCHEMAS)];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (schemas[name] || !requests[name]) continue;
    schemas[name] = requests[name];
    pending.push(...referencedSchemas(requests[name]));
  }
  return schemas;
}

const SCHEMA_REF = '#/components/schemas/';

function referencedSchemas(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => referencedSchemas(item, found));
  else if (typeof value === 'object' && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(SCHEMA_REF)) {
        found.push(child.slice(SCHEMA_REF.length));
      } else referencedSchemas(child, found);
    }
  }
  return found;
}

/** Every `$ref` names a component: a schema missing here would only show up in a client generator. */
function checkReferences(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  const missing = [...new Set(referencedSchemas(document))].filter((name) => !schemas[name]);
  if (missing.length > 0) throw new Error(`OpenAPI document: no schema for ${missing.join(', ')}`);
}

/** A copy with every object's keys in sorted order (arrays keep theirs): a stable document. */
export function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortKeys) as T;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  ) as T;
}
