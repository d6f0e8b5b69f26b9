import type { SchemaObject } from '@nestjs/swagger';
import { targetConstructorToSchema, validationMetadatasToSchemas } from 'class-validator-jsonschema';
import type { Schema } from './schema-helpers';

// class-transformer keeps its metadata storage (the @Type targets of nested DTOs) out of its typed
// entry point; class-validator-jsonschema needs it to name the element class of a nested array.
type ClassTransformerStorage = typeof import('class-transformer/types/storage');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as ClassTransformerStorage;

const OPTIONS = {
  classTransformerMetadataStorage: defaultMetadataStorage,
  refPointerPrefix: '#/components/schemas/',
};

/**
 * Request schemas are derived from the DTOs' class-validator decorators, so the document states
 * exactly the rules the validation pipe enforces. Descriptions, defaults and what class-validator
 * cannot say (a nullable section, any JSON value) come from `@JSONSchema()` on the DTO property.
 */
export function requestSchemas(): Record<string, SchemaObject> {
  const schemas = validationMetadatasToSchemas(OPTIONS) as Record<string, SchemaObject>;
  return Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, normalize(schema) as SchemaObject]));
}

/** The schema of one DTO class (path parameters, query strings). */
export function dtoSchema(dto: new () => object): SchemaObject {
  return normalize(targetConstructorToSchema(dto, OPTIONS) as SchemaObject) as SchemaObject;
}

/**
 * OpenAPI 3.0 ignores the siblings of `$ref`: class-validator-jsonschema's `{$ref, type: 'object'}`
 * (ValidateNested with IsObject) becomes the bare reference, and a reference with a description or
 * `nullable` is wrapped in `allOf`.
 */
function normalize(schema: Schema): Schema {
  const { $ref, ...rest } = schema as SchemaObject & { $ref?: string };
  if (typeof $ref !== 'string') return normalizeChildren(schema as SchemaObject);
  const { type: _type, ...siblings } = rest;
  return Object.keys(siblings).length === 0 ? { $ref } : { allOf: [{ $ref }], ...normalizeChildren(siblings) };
}

function normalizeChildren(schema: SchemaObject): SchemaObject {
  const result: SchemaObject = { ...schema };
  if (schema.properties) {
    result.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => [name, normalize(property)]),
    );
  }
  if (schema.items) result.items = normalize(schema.items);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    result.additionalProperties = normalize(schema.additionalProperties);
  }
  for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
    if (schema[key]) result[key] = schema[key].map(normalize);
  }
  return result;
}
