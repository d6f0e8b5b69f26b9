import { RouteSchema } from '@nestjs/platform-fastify';
import type { Schema } from '../openapi/schema-helpers';
import { RESPONSE_SCHEMAS, type ResponseComponents } from '../openapi/schemas';

const REF = '#/components/schemas/';
/** What a serializer needs of a schema: its shape, not its words. */
const SHAPE_KEYS = ['type', 'properties', 'required', 'items', 'additionalProperties', 'enum', 'nullable'] as const;

/**
 * Serializes a route's 200 answer with a serializer compiled once from its response component
 * (Fastify's fast-json-stringify), instead of JSON.stringify on every answer. The component is the
 * one the OpenAPI document gives the route, typechecked against its libs/protocol type
 * (schemas.ts), so the serializer writes every field the type has and nothing else.
 *
 * @example
 * @SerializedAs('RetryDecision') decide(...): Promise<RetryDecision>
 */
export const SerializedAs = (component: keyof ResponseComponents): MethodDecorator =>
  RouteSchema({ response: { 200: serializerSchemaOf(component) } });

/** A response component as one self-contained JSON Schema: references inlined, descriptions dropped. */
export function serializerSchemaOf(component: keyof ResponseComponents): Record<string, unknown> {
  return inline(RESPONSE_SCHEMAS[component]);
}

function inline(schema: Schema): Record<string, unknown> {
  if ('$ref' in schema) return inline(RESPONSE_SCHEMAS[schema.$ref.slice(REF.length) as keyof ResponseComponents]);
  // `ref(name, description)` and `nullableRef(…)` wrap the reference in a one-item allOf.
  if (schema.allOf?.length === 1 && !schema.properties) {
    const inner = inline(schema.allOf[0]);
    return schema.nullable ? { ...inner, nullable: true } : inner;
  }
  const result: Record<string, unknown> = {};
  for (const key of SHAPE_KEYS) if (schema[key] !== undefined) result[key] = schema[key];
  if (schema.properties) {
    result.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, p]) => [name, inline(p)]));
  }
  if (schema.items) result.items = inline(schema.items);
  if (typeof schema.additionalProperties === 'object')
    result.additionalProperties = inline(schema.additionalProperties);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) if (schema[key]) result[key] = schema[key].map(inline);
  return result;
}
