import {
  arrayOf,
  boolean,
  componentRefs,
  integer,
  nullableInstant,
  number,
  objectSchema,
  optional,
  recordOf,
  string,
} from './schema-helpers';

// The `@ts-expect-error` lines are the point of this file: `npx tsc` fails if any of them compiles,
// that is if PropertiesOf stops telling a schema from the type it must describe.

const STATES = ['closed', 'open'] as const;
type State = (typeof STATES)[number];

interface Nested {
  count: number;
}

interface Shape {
  name: string;
  state: State;
  since: number | null;
  ok: boolean;
  tags: string[];
  nested: Nested;
  byName: Record<string, Nested>;
  note?: string;
}

const { ref } = componentRefs<{ Nested: Nested; Other: { other: string } }>();

const shape = () =>
  objectSchema<Shape>({
    name: string('The name.'),
    state: string(undefined, { enum: STATES }),
    since: nullableInstant('Since when'),
    ok: boolean(),
    tags: arrayOf(string()),
    nested: ref('Nested'),
    byName: recordOf(ref('Nested')),
    note: optional(string()),
  });

describe('objectSchema and PropertiesOf', () => {
  it('writes the schema the helpers describe, optional properties not required', () => {
    expect(shape()).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The name.' },
        state: { type: 'string', enum: ['closed', 'open'] },
        since: { type: 'integer', description: 'Since when (epoch ms).', format: 'int64', nullable: true },
        ok: { type: 'boolean' },
        tags: { type: 'array', items: { type: 'string' } },
        nested: { $ref: '#/components/schemas/Nested' },
        byName: { type: 'object', additionalProperties: { $ref: '#/components/schemas/Nested' } },
        note: { type: 'string' },
      },
      required: ['name', 'state', 'since', 'ok', 'tags', 'nested', 'byName'],
    });
  });

  it('refuses a schema of another type than the property (checked by the compiler)', () => {
    const wrong = () => [
      // @ts-expect-error a string property needs a string schema
      objectSchema<{ name: string }>({ name: integer() }),
      // @ts-expect-error a number property needs an integer or number schema
      objectSchema<{ count: number }>({ count: string() }),
      // @ts-expect-error an enum property needs its own tuple, not any string
      objectSchema<{ state: State }>({ state: string() }),
      // @ts-expect-error nor another tuple
      objectSchema<{ state: State }>({ state: string(undefined, { enum: ['closed'] }) }),
      // @ts-expect-error a property that may be null must be nullable
      objectSchema<{ since: number | null }>({ since: integer() }),
      // @ts-expect-error and one that may not must not be
      objectSchema<{ since: number }>({ since: nullableInstant('Since when') }),
      // @ts-expect-error an array needs an array schema of its element
      objectSchema<{ tags: string[] }>({ tags: arrayOf(number()) }),
      // @ts-expect-error an object needs the schema of its type
      objectSchema<{ nested: Nested }>({ nested: ref('Other') }),
      // @ts-expect-error a missing property
      objectSchema<{ a: string; b: string }>({ a: string() }),
      // @ts-expect-error an optional property is wrapped in optional()
      objectSchema<{ a?: string }>({ a: string() }),
      // @ts-expect-error a hand-written schema says nothing the compiler can check
      objectSchema<{ a: string }>({ a: { type: 'string' } }),
    ];
    expect(wrong).toBeInstanceOf(Function);
  });
});
