import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';

export type Schema = SchemaObject | ReferenceObject;

/** A property that may be absent: `optional(schema)`. */
export interface OptionalProperty {
  optional: Schema;
}

/** A property whose type includes null must say `nullable: true`. */
type PropertySchema<V> = null extends V ? (SchemaObject & { nullable: true }) | NullableRef : Schema;
type NullableRef = { allOf: [ReferenceObject]; nullable: true; description?: string };

/**
 * One schema per property of `T`, no more and no fewer: optional properties (`a?: …`) are wrapped
 * in `optional()`, required ones are not, and a property that may be null is `nullable`. The
 * compiler then keeps a response schema in step with its TypeScript interface.
 */
export type PropertiesOf<T> = {
  [K in keyof T]-?: object extends Pick<T, K>
    ? { optional: PropertySchema<Exclude<T[K], undefined>> }
    : PropertySchema<T[K]>;
};

export const optional = <S extends Schema>(schema: S): { optional: S } => ({ optional: schema });

export const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/** A reference that may also be null (OpenAPI 3.0 ignores the siblings of a bare `$ref`). */
export const nullableRef = (name: string, description?: string): NullableRef => ({
  allOf: [ref(name)],
  nullable: true,
  ...(description ? { description } : {}),
});

/** An object schema for `T`: every property described, the non-optional ones required. */
export function objectSchema<T>(properties: PropertiesOf<T>, options: { description?: string } = {}): SchemaObject {
  const described: Record<string, Schema> = {};
  const required: string[] = [];
  for (const [name, property] of Object.entries(properties as Record<string, Schema | OptionalProperty>)) {
    if ('optional' in property) {
      described[name] = property.optional;
    } else {
      described[name] = property;
      required.push(name);
    }
  }
  return {
    type: 'object',
    ...(options.description ? { description: options.description } : {}),
    properties: described,
    ...(required.length > 0 ? { required } : {}),
  };
}

/** Every member of a string union, checked by the compiler: `enumOf<BreakerState>()(['closed', …])`. */
export const enumOf =
  <T extends string>() =>
  <const V extends readonly T[]>(
    values: V & ([T] extends [V[number]] ? unknown : { missing: Exclude<T, V[number]> }),
  ) => [...values];

export const integer = <const E extends SchemaObject = object>(
  description?: string,
  extra?: E,
): SchemaObject & NoInfer<E> => ({
  type: 'integer',
  ...(description ? { description } : {}),
  ...(extra as E),
});

export const number = <const E extends SchemaObject = object>(
  description?: string,
  extra?: E,
): SchemaObject & NoInfer<E> => ({
  type: 'number',
  ...(description ? { description } : {}),
  ...(extra as E),
});

export const string = <const E extends SchemaObject = object>(
  description?: string,
  extra?: E,
): SchemaObject & NoInfer<E> => ({
  type: 'string',
  ...(description ? { description } : {}),
  ...(extra as E),
});

export const boolean = (description?: string): SchemaObject => ({
  type: 'boolean',
  ...(description ? { description } : {}),
});

/** An epoch-milliseconds instant (API.md §Conventions: `…At`). */
export const instant = (description: string): SchemaObject =>
  integer(`${description} (epoch ms).`, { format: 'int64' });

/** The same, or null. */
export const nullableInstant = (description: string): SchemaObject & { nullable: true } => ({
  ...instant(description),
  nullable: true,
});
