import type { OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import Ajv, { type ValidateFunction } from 'ajv';

/**
 * The request schemas of the OpenAPI document, compiled once with ajv: per route, the path
 * parameters, the query string and the JSON body, each as the JSON Schema ajv checks.
 */

export interface RouteValidator {
  params?: ValidateFunction;
  body?: ValidateFunction;
  query?: ValidateFunction;
}

/** Validators by `METHOD /fastify/:route`. */
export type RequestValidators = ReadonlyMap<string, RouteValidator>;

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
export const VALUE_KEYWORDS: ReadonlySet<string> = new Set(VALUE_KEYWORD_LIST);

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
