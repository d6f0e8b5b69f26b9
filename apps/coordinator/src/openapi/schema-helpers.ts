import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';

export type Schema = SchemaObject | ReferenceObject;

declare const DESCRIBES: unique symbol;

/**
 * The compiler's record of the TypeScript type a schema describes; nothing of it exists at run
 * time. It is invariant (`T` in and out), so a schema of `string` is not one of `BreakerState`, nor
 * one of `string | null`, and the other way round.
 */
interface Describes<T> {
  readonly [DESCRIBES]: (value: T) => T;
}

/** A schema of values of type `T`, made by the helpers below (a bare object literal is not one). */
export type Described<T> = Schema & Describes<T>;

/** An object schema of `T`: a component of the document. */
export type DescribedObject<T> = SchemaObject & Describes<T>;

const described = <T>(schema: Schema): Described<T> => schema as Described<T>;

/** A property that may be absent: `optional(schema)`. */
export interface OptionalProperty<S extends Schema = Schema> {
  optional: S;
}

/**
 * One schema per property of `T`, no more and no fewer, each describing exactly the property's
 * type: a string property a string schema (a union of literals the same `enum` tuple), a number
 * an integer or number schema, a nullable one `nullable: true`, an array an array of its element's
 * schema, a nested object its component (`ref`) or its own `objectSchema`. Optional properties
 * (`a?: …`) are wrapped in `optional()`, required ones are not. A change of a type in libs/protocol
 * then fails the typecheck of its schema.
 */
export type PropertiesOf<T> = {
  [K in keyof T]-?: object extends Pick<T, K> ? OptionalProperty<Described<Exclude<T[K], undefined>>> : Described<T[K]>;
};

export const optional = <S extends Schema>(schema: S): OptionalProperty<S> => ({ optional: schema });

/** A reference to a component by name, unchecked (the route decorators name DTOs and responses). */
export const componentRef = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/**
 * References to the components of `C` (component name → the type it describes): `ref('BudgetView')`
 * describes a BudgetView; with a description it is wrapped in `allOf` (OpenAPI 3.0 ignores the
 * siblings of a bare `$ref`). `nullableRef` describes the same, or null.
 */
export function componentRefs<C>() {
  const ref = <K extends keyof C & string>(name: K, description?: string): Described<C[K]> =>
    described(description ? { allOf: [componentRef(name)], description } : componentRef(name));
  const nullableRef = <K extends keyof C & string>(name: K, description?: string): Described<C[K] | null> =>
    described({ allOf: [componentRef(name)], nullable: true, ...(description ? { description } : {}) });
  return { ref, nullableRef };
}

/** An object schema for `T`: every property described, the non-optional ones required. */
export function objectSchema<T>(
  properties: PropertiesOf<T>,
  options: { description?: string } = {},
): DescribedObject<T> {
  const schemas: Record<string, Schema> = {};
  const required: string[] = [];
  for (const [name, property] of Object.entries(properties as Record<string, Schema | OptionalProperty>)) {
    if ('optional' in property) {
      schemas[name] = property.optional;
    } else {
      schemas[name] = property;
      required.push(name);
    }
  }
  return {
    type: 'object',
    ...(options.description ? { description: options.description } : {}),
    properties: schemas,
    ...(required.length > 0 ? { required } : {}),
  } as DescribedObject<T>;
}

/** An array of what `items` describes. */
export const arrayOf = <T>(items: Described<T>, description?: string): Described<T[]> =>
  described({ type: 'array', items, ...(description ? { description } : {}) });

/** An object of any keys, each value what `values` describes. */
export const recordOf = <T>(values: Described<T>, description?: string): Described<Record<string, T>> =>
  described({ type: 'object', ...(description ? { description } : {}), additionalProperties: values });

/** One of two schemas. */
export const oneOf = <A, B>(a: Described<A>, b: Described<B>): Described<A | B> => described({ oneOf: [a, b] });

/** Any JSON value, or null. */
export const anyValue = (description: string): Described<unknown> => described({ description, nullable: true });

/** Keywords beside `type`: `enum` (a tuple of libs/protocol) narrows the type, `nullable: true` adds null. */
type Extra = Omit<SchemaObject, 'type' | 'enum' | 'nullable'> & { enum?: readonly unknown[]; nullable?: boolean };

type Valued<Base, E> =
  (E extends { enum: readonly (infer V)[] } ? V : Base) | (E extends { nullable: true } ? null : never);

function scalar<Base>(type: 'integer' | 'number' | 'string') {
  return <const E extends Extra = object>(description?: string, extra?: E): Described<Valued<Base, E>> =>
    described({ type, ...(description ? { description } : {}), ...(extra as SchemaObject) });
}

export const integer = scalar<number>('integer');
export const number = scalar<number>('number');
export const string = scalar<string>('string');

export const boolean = (description?: string): Described<boolean> =>
  described({ type: 'boolean', ...(description ? { description } : {}) });

/** An epoch-milliseconds instant (docs/api.md, Conventions: `…At`). */
export const instant = (description: string): Described<number> =>
  integer(`${description} (epoch ms).`, { format: 'int64' });

/** The same, or null. */
export const nullableInstant = (description: string): Described<number | null> =>
  integer(`${description} (epoch ms).`, { format: 'int64', nullable: true });
