import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ROUTE_KIND, type RouteKind } from '../auth/route-kind';
import { documentRoute, type RouteDoc } from '../openapi/route-docs';
import { RESPONSE_SCHEMAS, type ResponseComponents } from '../openapi/schemas';
import { SerializedAs } from './serialization';

/** A route's documentation, and whether its 200 answer is written by a compiled serializer. */
export interface RouteSpec extends RouteDoc {
  /**
   * Serialize the 200 answer with a serializer compiled from its response component (the 200
   * response's `schema`, serialization.ts) instead of JSON.stringify. For the routes on the hot path.
   */
  serialized?: true;
}

/** Routes that need no token: health, metrics (and the documentation itself). */
export const PublicRoute = (spec: RouteSpec): MethodDecorator => route('public', spec);

/** `/v1` routes: a `client` or `admin` token whose namespaces include `{ns}`. */
export const ClientRoute = (spec: RouteSpec): MethodDecorator => route('client', spec);

/**
 * The decision endpoints (retry, admit, take): a denial is not an error but a 200 with
 * `allow: false`; a store that does not answer is a prompt 503 the SDKs fall back on.
 */
export const DecisionRoute = (spec: RouteSpec): MethodDecorator => route('decision', spec);

/** `/admin/v1` routes: an `admin` token. */
export const AdminRoute = (spec: RouteSpec): MethodDecorator => route('admin', spec);

/**
 * One decorator per route sets who may call it (the AuthGuard reads its kind), its OpenAPI
 * operation and, when asked, its serializer.
 *
 * @example
 * @Post() @HttpCode(200) @DecisionRoute({ operationId: 'decideRetry', …, serialized: true })
 */
function route(kind: RouteKind, spec: RouteSpec): MethodDecorator {
  const { serialized, ...doc } = spec;
  const decorators: MethodDecorator[] = [SetMetadata(ROUTE_KIND, kind), documentRoute(kind, doc)];
  if (serialized) decorators.push(SerializedAs(serializedComponentOf(doc)));
  return applyDecorators(...decorators);
}

/** The response component of a route's 200 answer, which its serializer is compiled from. */
function serializedComponentOf(doc: RouteDoc): keyof ResponseComponents {
  const schema = doc.responses.find((response) => response.status === 200)?.schema;
  if (schema === undefined || !Object.hasOwn(RESPONSE_SCHEMAS, schema)) {
    throw new Error(`${doc.operationId} is serialized: its 200 response needs a response component as its schema`);
  }
  return schema as keyof ResponseComponents;
}
