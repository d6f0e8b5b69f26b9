import { Agent } from 'node:http';
import type { OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * Generated bad requests against every operation of the app's own /docs-json (Redis store, auth
 * off so every request reaches validation): wrong types, numbers out of range, unknown keys,
 * missing fields, deep nesting, huge strings and arrays, arrays where objects go, malformed JSON,
 * other content types, bad names in the path and bad query strings. Every request is bad by
 * construction, and each one must be refused with a 4xx and the API's error body (under 16 KiB),
 * none with a 5xx; the store's keys and values (DUMP) and what the read endpoints answer are the
 * same afterwards. The generator is seeded, so a failure names a case that can be run again.
 */

/** Fixed, so every run sends the same requests; SLUICE_FUZZ_SEED and SLUICE_FUZZ_CASES explore further. */
const SEED = Number(process.env.SLUICE_FUZZ_SEED ?? 0x51_1ce);
const CASES = Number(process.env.SLUICE_FUZZ_CASES ?? 10_240);
/** The run stops at this many wrong answers: they are what the failure shows. */
const MAX_PROBLEMS = 20;
const CONCURRENCY = 8;
const MAX_ERROR_BYTES = 16 * 1024;
/** Not a timing check: a request that gets no answer at all (an event stream let through) must not hang the run. */
const NO_ANSWER_MS = 30_000;
const NS = 'fuzz';
const DEP = 'payments-api';

/** Long windows and leases, so that nothing the seed wrote slides out or expires during the run. */
const POLICIES = {
  namespaces: {
    [NS]: {
      default: { retryBudget: { windowSeconds: 600 }, breaker: { windowSeconds: 600 } },
      dependencies: { [DEP]: { concurrency: { limit: 100, leaseMs: 3_600_000 } } },
      limits: { checkout: { rate: 1000, periodMs: 86_400_000, burst: 1000 } },
      queues: { emails: { maxAttempts: 5 } },
    },
  },
};

/** Valid values for the path parameters the routes use. */
const PATH_VALUES: Record<string, string> = {
  ns: NS,
  dep: DEP,
  limit: 'checkout',
  queue: 'emails',
  key: 'order-1',
  id: 'msg-1',
};

/** Path segments, each kept for a parameter only where its pattern refuses it. */
const BAD_SEGMENTS = [
  'UPPER',
  '-lead',
  '.dot',
  '_under',
  'a b',
  'a/b',
  'a\\b',
  'a?b',
  'a#b',
  'a%b',
  'caf\u00e9',
  '\u{1f600}',
  'a\u0000b',
  'a\nb',
  "x'or'1",
  '<b>',
  '{x}',
  'a,b',
  'a@b',
  '*',
  '~',
  '',
  'n'.repeat(129),
  'k'.repeat(256),
  'z'.repeat(700),
];
/** Strings for string fields, kept only where the field's pattern refuses them. */
const BAD_STRINGS = ['', ' ', 'UPPER CASE', 'a b', 'a/b', 'caf\u00e9', '\u{1f600}', 'a\u0000', 'x'.repeat(300), '-x'];
/** Bodies that are not JSON objects, or not JSON, each with a flaw whatever the route. */
const RAW_BODIES = [
  '{',
  '{"zz":',
  '{"zz":1,}',
  "{'zz':1}",
  '{"zz":NaN}',
  '{"zz":undefined}',
  '{} {}',
  '[]',
  '[{}]',
  'null',
  '0',
  '"text"',
  'true',
  '{"__proto__":{"zz":1}}',
  '{"constructor":{"prototype":{"zz":1}}}',
  '\ufeff{"zz_unknown":1}',
  '{"zz\\ud800":1}',
  '{"a":1,"a":2,"zz":3}',
  '\u0000',
  ' ',
];
const OTHER_TYPES = ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data'];

// A small seeded generator (mulberry32): the same seed, the same requests.
class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  between(low: number, high: number): number {
    return low + this.int(high - low + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

type Schema = SchemaObject | ReferenceObject;
const NONE = Symbol('none');

interface Operation {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  operation: OperationObject;
  pathParams: ParameterObject[];
  queryParams: ParameterObject[];
  body?: Schema;
}

interface Case {
  index: number;
  operation: Operation;
  kinds: string[];
  url: string;
  /** JSON text (or bytes) and its content type; absent: no body. */
  body?: { text: string | Buffer; type: string };
  /** False for an operation with no input at all (health, metrics): only no 5xx is asked. */
  flawed: boolean;
}

/** The generator: valid values from the document's schemas, and flaws that no schema allows. */
class Generator {
  constructor(
    private readonly document: OpenAPIObject,
    private readonly random: Random,
  ) {}

  resolve(schema: Schema): SchemaObject {
    if ('$ref' in schema) {
      const found = this.document.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')];
      if (!found) throw new Error(`no schema ${schema.$ref}`);
      return this.resolve(found);
    }
    if (schema.allOf?.length === 1 && !schema.properties) return this.resolve(schema.allOf[0]);
    return schema;
  }

  /** A small valid value: required properties only, the lowest numbers, a string the pattern takes. */
  sample(schema: Schema): unknown {
    const s = this.resolve(schema);
    if (s.enum) return s.enum[0];
    switch (s.type) {
      case 'object':
        return Object.fromEntries((s.required ?? []).map((name) => [name, this.sample(s.properties![name])]));
      case 'integer':
        return Math.ceil(s.minimum ?? Math.min(1, s.maximum ?? 1));
      case 'number':
        return s.minimum ?? Math.min(1, s.maximum ?? 1);
      case 'boolean':
        return true;
      case 'array':
        return Array.from({ length: s.minItems ?? 0 }, () => this.sample(s.items!));
      case 'string':
        return this.validString(s);
      default:
        return s.properties ? {} : null;
    }
  }

  private validString(s: SchemaObject): string {
    const candidates = ['a', 'a1', '1', 'ab-1', 'a'.repeat(s.minLength ?? 1)];
    const found = candidates.find((c) => this.stringFits(s, c));
    if (found === undefined) throw new Error(`no sample string for ${JSON.stringify(s)}`);
    return found;
  }

  private stringFits(s: SchemaObject, value: string): boolean {
    if (s.pattern && !new RegExp(s.pattern).test(value)) return false;
    if (s.maxLength !== undefined && [...value].length > s.maxLength) return false;
    if (s.minLength !== undefined && [...value].length < s.minLength) return false;
    return !s.enum || s.enum.includes(value);
  }

  private nullable(schema: Schema): boolean {
    return !('$ref' in schema) && schema.nullable === true;
  }

  /** Whether `value` has a type the schema takes (ranges aside). */
  private typeFits(s: SchemaObject, nullable: boolean, value: unknown): boolean {
    if (value === null) return nullable;
    switch (s.type) {
      case 'integer':
        return Number.isInteger(value);
      case 'number':
        return typeof value === 'number';
      case 'string':
        return typeof value === 'string';
      case 'boolean':
        return typeof value === 'boolean';
      case 'array':
        return Array.isArray(value);
      case 'object':
        return typeof value === 'object' && !Array.isArray(value);
      default:
        return true;
    }
  }

  /** Plain values the schema refuses: another type, out of range, too long, off-pattern, off-enum. */
  badValues(schema: Schema): unknown[] {
    const s = this.resolve(schema);
    const nullable = this.nullable(schema);
    if (s.type === undefined && !s.properties && !s.enum) return [];
    const wrongTypes = ['1', 1.5, 7, true, [], {}, [1, 'a'], null].filter((v) => !this.typeFits(s, nullable, v));
    const values: unknown[] = [...wrongTypes];
    if (s.enum) values.push(`not-${String(s.enum[0])}`);
    if (s.type === 'integer' || s.type === 'number') {
      if (s.maximum !== undefined) values.push(s.maximum + 1, s.maximum * 1000 + 1, 1e300);
      if (s.minimum !== undefined) values.push(s.minimum - 1, -1e300);
      if (s.type === 'integer') values.push((s.minimum ?? 0) + 0.5);
    }
    if (s.type === 'string') {
      if (s.maxLength !== undefined) values.push('x'.repeat(s.maxLength + 1 + this.random.int(50)));
      for (const value of BAD_STRINGS) if (!this.stringFits(s, value)) values.push(value);
    }
    if (s.type === 'array') {
      if (s.maxItems !== undefined) values.push(Array.from({ length: s.maxItems + 1 }, () => this.sample(s.items!)));
      if (s.minItems) values.push([]);
    }
    return values;
  }

  /** A value the schema refuses, maybe deep inside an otherwise valid one; NONE if there is none. */
  invalid(schema: Schema, depth = 0): unknown {
    const s = this.resolve(schema);
    const options: Array<() => unknown> = [];
    const plain = this.badValues(schema);
    if (plain.length > 0) options.push(() => this.random.pick(plain));
    if (s.type === 'object' && s.properties && depth < 4) {
      const properties = s.properties;
      options.push(() => ({ ...(this.sample(s) as object), [this.unknownKey()]: this.junk() }));
      if (s.required?.length) {
        options.push(() => {
          const value = this.sample(s) as Record<string, unknown>;
          delete value[this.random.pick(s.required!)];
          return value;
        });
      }
      const nested = () => {
        const name = this.random.pick(Object.keys(properties));
        const bad = this.invalid(properties[name], depth + 1);
        return bad === NONE ? NONE : { ...(this.sample(s) as object), [name]: bad };
      };
      options.push(nested, nested);
    }
    if (s.type === 'object' && !s.properties && typeof s.additionalProperties === 'object' && depth < 4) {
      const values = s.additionalProperties;
      options.push(() => {
        const bad = this.invalid(values, depth + 1);
        return bad === NONE ? NONE : { 'x-fuzz': bad };
      });
    }
    if (s.type === 'array' && s.items && depth < 4) {
      const items = s.items;
      options.push(() => {
        const bad = this.invalid(items, depth + 1);
        return bad === NONE ? NONE : [this.sample(items), bad];
      });
    }
    for (let tries = 0; tries < 4 && options.length > 0; tries++) {
      const value = this.random.pick(options)();
      if (value !== NONE) return value;
    }
    return NONE;
  }

  unknownKey(): string {
    return this.random.pick([
      'zz',
      'zz_unknown',
      'constructor',
      'toString',
      'x'.repeat(300),
      `k${this.random.int(1e6)}`,
    ]);
  }

  /** Any JSON value, small. */
  junk(): unknown {
    return this.random.pick([1, 'x', true, null, [], {}, [1, [2]], { a: { b: 'c' } }]);
  }

  /** `[[[…]]]` or `{"a":{"a":…}}`, `levels` deep, as JSON text. */
  deepText(levels: number): string {
    return this.random.chance(0.5)
      ? '['.repeat(levels) + ']'.repeat(levels)
      : '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
  }

  // The cases.

  generate(operation: Operation, index: number): Case {
    const kinds: string[] = [];
    const flaws: Array<() => void> = [];
    const state = {
      params: Object.fromEntries(operation.pathParams.map((p) => [p.name, encodeURIComponent(PATH_VALUES[p.name])])),
      query: Object.fromEntries(
        operation.queryParams.filter((p) => p.required).map((p) => [p.name, [String(this.sample(p.schema!))]]),
      ) as Record<string, string[]>,
      body: undefined as Case['body'],
    };
    if (operation.pathParams.length > 0) flaws.push(() => this.badPath(operation, state.params, kinds));
    if (operation.queryParams.length > 0) flaws.push(() => this.badQuery(operation, state.query, kinds));
    if (operation.body) {
      const body = operation.body;
      // Bodies have the most ways to be wrong: three draws in five for them.
      for (let i = 0; i < 3; i++) flaws.push(() => (state.body = this.badBody(body, kinds)));
    }
    const flawed = flaws.length > 0;
    if (flawed) {
      this.random.pick(flaws)();
      if (this.random.chance(0.3)) this.random.pick(flaws)();
    } else {
      kinds.push('no input: junk query');
      state.query[this.unknownKey()] = [String(this.junk())];
    }
    // A junk body on a route that takes none: it must not turn a 4xx into a 5xx.
    if (!operation.body && operation.method !== 'get' && this.random.chance(0.2)) {
      kinds.push('body on a route without one');
      state.body = this.random.chance(0.5)
        ? { text: `{"a":${this.deepText(this.between(65, 3000))}}`, type: 'application/json' }
        : { text: JSON.stringify({ a: this.junk() }), type: 'application/json' };
    }
    const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => state.params[name]);
    const query = Object.entries(state.query)
      .flatMap(([name, values]) => values.map((value) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`))
      .join('&');
    return { index, operation, kinds, url: query ? `${path}?${query}` : path, body: state.body, flawed };
  }

  private between(low: number, high: number): number {
    return this.random.between(low, high);
  }

  private badPath(operation: Operation, params: Record<string, string>, kinds: string[]): void {
    const parameter = this.random.pick(operation.pathParams);
    const pattern = new RegExp((parameter.schema as SchemaObject).pattern!);
    const raw = this.random.chance(0.05);
    if (raw) {
      kinds.push(`path ${parameter.name}: broken escape`);
      params[parameter.name] = this.random.pick(['%', '%zz', '%C3', 'a%2', '%E0%A4%A']);
      return;
    }
    const value = this.random.pick(BAD_SEGMENTS.filter((segment) => !pattern.test(segment)));
    kinds.push(`path ${parameter.name}: ${JSON.stringify(value.slice(0, 20))}${value.length > 20 ? '…' : ''}`);
    params[parameter.name] = encodeURIComponent(value);
  }

  private badQuery(operation: Operation, query: Record<string, string[]>, kinds: string[]): void {
    const parameter = this.random.pick(operation.queryParams);
    const schema = this.resolve(parameter.schema!);
    const values: string[] = [];
    if (schema.type === 'integer' || schema.type === 'number') {
      if (schema.maximum !== undefined) values.push(String(schema.maximum + 1));
      if (schema.minimum !== undefined) values.push(String(schema.minimum - 1));
      values.push('abc', '1.5', 'NaN', '1,2', '[1]');
    } else {
      if (schema.maxLength !== undefined) values.push('r'.repeat(schema.maxLength + 1));
      if (schema.pattern) {
        const pattern = new RegExp(schema.pattern);
        values.push(...BAD_STRINGS.filter((value) => !pattern.test(value)));
      }
    }
    const options: Array<() => void> = [
      () => {
        kinds.push('query: unknown parameter');
        query[this.unknownKey()] = [String(this.junk())];
      },
      () => {
        const count = this.between(2, 300);
        kinds.push(`query: ${count} unknown parameters`);
        for (let i = 0; i < count; i++) query[`q${i}`] = ['1'];
      },
      () => {
        kinds.push(`query ${parameter.name}: given twice`);
        query[parameter.name] = ['1', '2'];
      },
    ];
    if (values.length > 0) {
      options.push(() => {
        const value = this.random.pick(values);
        kinds.push(`query ${parameter.name}: ${JSON.stringify(value.slice(0, 20))}`);
        query[parameter.name] = [value];
      });
    }
    if (parameter.required) {
      options.push(() => {
        kinds.push(`query ${parameter.name}: missing`);
        delete query[parameter.name];
      });
    }
    this.random.pick(options)();
  }

  private badBody(schema: Schema, kinds: string[]): Case['body'] {
    const json = (value: unknown) => ({ text: JSON.stringify(value), type: 'application/json' });
    const s = this.resolve(schema);
    const base = this.sample(schema) as Record<string, unknown>;
    const names = Object.keys(s.properties ?? {});
    const anyValue = names.filter((name) => this.badValues(s.properties![name]).length === 0);
    /** `base` with `name` set to this JSON text. */
    const withText = (name: string, text: string) =>
      JSON.stringify({ ...base, [name]: '\u0000here' }).replace('"\\u0000here"', text);
    const kind = this.random.int(100);
    if (kind < 55) {
      const bad = this.invalid(schema);
      if (bad !== NONE) {
        kinds.push('body: invalid value');
        return json(bad);
      }
    }
    if (kind < 62) {
      const levels = this.random.chance(0.8) ? this.between(65, 200) : this.between(1000, 6000);
      const name = anyValue.length > 0 && this.random.chance(0.5) ? this.random.pick(anyValue) : this.unknownKey();
      kinds.push(`body: ${name.slice(0, 20)} nested ${levels} deep`);
      return { text: withText(name, this.deepText(levels)), type: 'application/json' };
    }
    if (kind < 64) {
      const count = this.between(16_385, 20_000);
      const target = anyValue.length > 0 && this.random.chance(0.5) ? this.random.pick(anyValue) : undefined;
      kinds.push(`body: ${count} keys${target ? ` in ${target}` : ''}`);
      const keys = `{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`;
      return {
        text: target
          ? withText(target, keys)
          : JSON.stringify(base).replace(/^\{/, keys.slice(0, -1) + (Object.keys(base).length ? ',' : '')),
        type: 'application/json',
      };
    }
    if (kind < 66) {
      const count = this.between(65_537, 70_000);
      const name =
        anyValue.length > 0 && this.random.chance(0.5)
          ? this.random.pick(anyValue)
          : this.random.pick(names.length ? names : ['zz']);
      kinds.push(`body: ${name} an array of ${count}`);
      return { text: withText(name, `[${'0,'.repeat(count - 1)}0]`), type: 'application/json' };
    }
    if (kind < 72) {
      const strings = names.filter((name) => {
        const property = this.resolve(s.properties![name]);
        return property.type === 'string' && (property.maxLength !== undefined || property.pattern !== undefined);
      });
      const name = strings.length > 0 ? this.random.pick(strings) : this.unknownKey();
      const property = s.properties && Object.hasOwn(s.properties, name) ? this.resolve(s.properties[name]) : undefined;
      let length = this.random.chance(0.9) ? this.between(1_000, 100_000) : this.between(500_000, 1_100_000);
      if (property?.maxLength !== undefined) length = Math.max(length, property.maxLength + 1);
      const value = 'x'.repeat(length);
      if (property && this.stringFits(property, value)) throw new Error(`${name} takes ${length} x's`);
      kinds.push(`body: ${name.slice(0, 20)} a string of ${length}`);
      return json({ ...base, [name]: value });
    }
    if (kind < 76) {
      kinds.push('body: an array where the object goes');
      return json(this.random.chance(0.5) ? [base] : []);
    }
    if (kind < 84) {
      const text = this.random.pick(RAW_BODIES);
      kinds.push(`body: raw ${JSON.stringify(text.slice(0, 20))}`);
      return { text, type: 'application/json' };
    }
    if (kind < 87) {
      kinds.push('body: invalid UTF-8');
      return { text: Buffer.from([0x7b, 0x22, 0x7a, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), type: 'application/json' };
    }
    if (kind < 90) {
      const type = this.random.pick(OTHER_TYPES);
      kinds.push(`body: as ${type}`);
      return { text: JSON.stringify({ ...base, zz: 1 }), type };
    }
    if (kind < 94 && names.length > 0) {
      const name = this.random.pick(
        names.filter((n) => this.badValues(s.properties![n]).some((v) => typeof v === 'number')).concat(['zz']),
      );
      kinds.push(`body: ${name} 1e400`);
      return {
        text: withText(name, this.random.pick(['1e400', '-1e400', '1' + '0'.repeat(400)])),
        type: 'application/json',
      };
    }
    kinds.push('body: unknown key');
    return json({ ...base, [this.unknownKey()]: this.junk() });
  }
}

function operationsOf(document: OpenAPIObject): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'post', 'put', 'delete'] as const) {
      const operation = item[method];
      if (!operation) continue;
      const parameters = (operation.parameters ?? []) as ParameterObject[];
      const body = operation.requestBody as { content?: Record<string, { schema: Schema }> } | undefined;
      operations.push({
        method,
        path,
        operation,
        pathParams: parameters.filter((p) => p.in === 'path'),
        queryParams: parameters.filter((p) => p.in === 'query'),
        body: body?.content?.['application/json']?.schema,
      });
    }
  }
  return operations;
}

/** Every key under `prefix` with its type and DUMP, sorted. */
async function storeSnapshot(redis: Redis, prefix: string): Promise<Record<string, string>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  const snapshot: Record<string, string> = {};
  for (const key of keys.sort()) {
    const [type, dump] = await Promise.all([redis.type(key), redis.dumpBuffer(key)]);
    snapshot[key] = `${type}:${dump?.toString('hex') ?? 'gone'}`;
  }
  return snapshot;
}

/** What differs between two snapshots, key by key. */
function differences(before: Record<string, string>, after: Record<string, string>): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys
    .filter((key) => before[key] !== after[key])
    .map((key) => `${key}: ${before[key] === undefined ? 'added' : after[key] === undefined ? 'removed' : 'changed'}`);
}

describe('fuzzing every operation of /docs-json with bad requests (Redis store)', () => {
  let coordinator: TestCoordinator;
  let redis: Redis;
  let baseUrl: string;
  let document: OpenAPIObject;
  let operations: Operation[];
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

  const post = (path: string, body: object) => request(baseUrl).post(path).agent(agent).send(body);
  const get = (path: string) => request(baseUrl).get(path).agent(agent);

  /** What the read endpoints answer about the seeded state. */
  async function reads(): Promise<Record<string, unknown>> {
    const paths = [
      `/v1/${NS}/deps/${DEP}`,
      `/v1/${NS}/deps/${DEP}/history`,
      `/v1/${NS}/deps/tripped-api`,
      `/v1/${NS}/idempotency/order-1`,
      `/admin/v1/${NS}/breakers`,
      `/admin/v1/${NS}/budgets`,
      `/admin/v1/${NS}/queues`,
      `/admin/v1/${NS}/queues/emails/dead-letters`,
      `/admin/v1/${NS}/policies/deps/policy-api`,
      `/admin/v1/${NS}/policies/limits/checkout`,
      `/admin/v1/audit?ns=${NS}`,
    ];
    const answers: Record<string, unknown> = {};
    for (const path of paths) {
      const res = await get(path);
      answers[path] = { status: res.status, etag: res.headers.etag, body: res.body };
    }
    return answers;
  }

  beforeAll(async () => {
    // Listening, so that requests travel as bytes on keep-alive sockets (8 at a time).
    coordinator = await testCoordinator({ redis: true, policies: POLICIES, listen: true, label: 'fuzz' });
    baseUrl = coordinator.url;
    redis = coordinator.redisClient();
    document = (await get('/docs-json').expect(200)).body as OpenAPIObject;
    operations = operationsOf(document);

    // State for bad requests to leave alone: budget deposits and grants, a lease, a take, a claim,
    // a failed delivery, a tripped breaker, a policy document, and their audit entries.
    const report = { reporter: 'seed', deps: [{ dep: DEP, requests: 40, successes: 38, failures: 2, slow: 1 }] };
    await post(`/v1/${NS}/reports`, report).expect(200);
    for (let i = 0; i < 2; i++) await post(`/v1/${NS}/deps/${DEP}/retry`, { attempt: 1, idempotent: true }).expect(200);
    expect((await post(`/v1/${NS}/deps/${DEP}/admit`, {}).expect(200)).body.lease).toBeDefined();
    await post(`/v1/${NS}/limits/checkout/take`, { key: 'user-1' }).expect(200);
    await post(`/v1/${NS}/idempotency/order-1/claim`, { fingerprint: 'f', leaseMs: 3_600_000 }).expect(201);
    await post(`/v1/${NS}/queues/emails/attempts`, { messageId: 'msg-1', payload: { a: [1] } }).expect(200);
    await post(`/admin/v1/${NS}/breakers/tripped-api/trip`, { reason: 'seed' }).expect(200);
    await request(baseUrl)
      .put(`/admin/v1/${NS}/policies/deps/policy-api`)
      .agent(agent)
      .send({ mode: 'shadow' })
      .expect(200);
  });

  afterAll(async () => {
    agent.destroy();
    await coordinator?.close();
  });

  it('reads the document: every operation of the API, and request schemas to derive bad input from', () => {
    expect(operations.length).toBeGreaterThanOrEqual(38);
    expect(operations.filter((operation) => operation.body).length).toBeGreaterThanOrEqual(12);
  });

  /** Sends one case; what was wrong with the answer, or nothing. */
  async function run(c: Case): Promise<string | undefined> {
    // A bad request let through to the event stream would never end: it fails, and does not hang the run.
    const call = request(baseUrl)[c.operation.method](c.url).agent(agent).timeout({ response: NO_ANSWER_MS });
    // The text or bytes as they are: superagent would encode a Buffer as JSON.
    const sent = c.body
      ? call
          .set('content-type', c.body.type)
          .serialize((body: unknown) => body as string)
          .send(c.body.text as string)
      : call;
    const res = await sent.catch((error: Error) => error);
    if (res instanceof Error) return caseProblem(c, `no answer (${res.message})`, '');
    const text = res.text ?? '';
    const wrong =
      res.status >= 500
        ? `answered ${res.status}`
        : c.flawed && res.status < 400
          ? `accepted with ${res.status}`
          : res.status >= 400 && !isErrorBody(res, text)
            ? `answered ${res.status} without the API's error body`
            : Buffer.byteLength(text) >= MAX_ERROR_BYTES && res.status >= 400
              ? `answered a ${Buffer.byteLength(text)}-byte error`
              : undefined;
    return wrong ? caseProblem(c, wrong, text) : undefined;
  }

  function caseProblem(c: Case, wrong: string, text: string): string {
    const body = c.body ? ` body(${c.body.type}) ${String(c.body.text).slice(0, 160)}` : '';
    const request = `${c.operation.method.toUpperCase()} ${c.url.slice(0, 200)} [${c.kinds.join('; ')}]${body}`;
    return `#${c.index} ${request} → ${wrong}: ${text.slice(0, 300)}`;
  }

  function isErrorBody(res: request.Response, text: string): boolean {
    if (!/^application\/json/.test(res.headers['content-type'] ?? '')) return false;
    const body = JSON.parse(text) as Record<string, unknown>;
    return body.statusCode === res.status && typeof body.code === 'string' && typeof body.message === 'string';
  }

  it(`refuses ${CASES} generated bad requests with a 4xx and the error body, never a 5xx, changing nothing`, async () => {
    const random = new Random(SEED);
    const generator = new Generator(document, random);
    const cases = Array.from({ length: CASES }, (_, index) =>
      generator.generate(operations[index % operations.length], index),
    );
    const readsBefore = await reads();
    const before = await storeSnapshot(redis, `${coordinator.keyPrefix}:`);
    expect(Object.keys(before).length).toBeGreaterThan(5);

    const problems: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < cases.length && problems.length < MAX_PROBLEMS) {
        const c = cases[next++];
        const problem = await run(c);
        if (problem) problems.push(problem);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    const after = await storeSnapshot(redis, `${coordinator.keyPrefix}:`);
    expect(problems).toEqual([]);
    expect(differences(before, after)).toEqual([]);
    expect(await reads()).toEqual(readsBefore);
    // Every operation was fuzzed, with every kind of flaw.
    const families = [
      'path ',
      'broken escape',
      'query ',
      'query: ',
      'body: invalid value',
      'nested',
      'keys',
      'an array of',
      'a string of',
      'an array where the object goes',
      'body: raw',
      'invalid UTF-8',
      'body: as ',
      '1e400',
      'body: unknown key',
      'body on a route without one',
      'no input',
    ];
    const count = (family: string) => cases.filter((c) => c.kinds.some((kind) => kind.includes(family))).length;
    expect(families.filter((family) => count(family) < 10)).toEqual([]);
    for (const operation of operations) {
      expect(cases.filter((c) => c.operation === operation).length).toBeGreaterThanOrEqual(
        Math.floor(CASES / operations.length),
      );
    }
  }, 300_000);

  /** A body of `text` for every operation that takes a body, with valid path parameters. */
  async function everyBodyRoute(text: string) {
    const answers = [];
    for (const operation of operations.filter((o) => o.body)) {
      const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(PATH_VALUES[name]));
      const res = await request(baseUrl)
        [operation.method](path)
        .agent(agent)
        .set('content-type', 'application/json')
        .send(text);
      const details = (res.body?.details ?? []) as Array<{ field: string }>;
      answers.push({
        route: `${operation.method.toUpperCase()} ${operation.path}`,
        status: res.status,
        bytes: Buffer.byteLength(res.text ?? ''),
        details: details.length,
        field: details[0]?.field,
      });
    }
    return answers;
  }

  it('answers JSON nested 5,000 deep with a 400 naming the field, on every route that takes a body', async () => {
    const deep = `{"payload":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    for (const answer of await everyBodyRoute(deep)) {
      expect(answer).toEqual({ ...answer, status: 400, details: 1, field: expect.stringMatching(/^payload\.0\.0\./) });
    }
  });

  it('answers 20,000 unknown keys with a 400 under 16 KiB naming the body, on every route that takes a body', async () => {
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"key${i}":${i}`).join(',')}}`;
    for (const answer of await everyBodyRoute(keys(20_000))) {
      expect(answer).toEqual({ ...answer, status: 400, details: 1, field: 'body' });
      expect([answer.route, answer.bytes < MAX_ERROR_BYTES]).toEqual([answer.route, true]);
    }
    // Fewer keys than the scan allows: the schema names one field (a missing one, or the first unknown key).
    for (const answer of await everyBodyRoute(keys(10_000))) {
      expect(answer).toEqual({ ...answer, status: 400, details: 1, field: expect.any(String) });
      expect([answer.route, answer.bytes < MAX_ERROR_BYTES]).toEqual([answer.route, true]);
    }
  });
});
