import type { OpenAPIObject } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../common/api-error';
import { BODY_LIMITS, JsonShapeScanner, checkBodyShape } from '../body-shape';
import { compileRequestValidators } from './compile';
import { shapeError, validateRequest } from './install';

/** `depth` arrays inside each other (the innermost empty). */
const nested = (depth: number): unknown => {
  let value: unknown[] = [];
  for (let i = 1; i < depth; i++) value = [value];
  return value;
};

describe('checkBodyShape', () => {
  it('takes a body nested to the limit and names the first container past it', () => {
    expect(checkBodyShape({ payload: nested(BODY_LIMITS.maxDepth - 1) })).toBeUndefined();
    const problem = checkBodyShape({ payload: nested(BODY_LIMITS.maxDepth) });
    expect(problem).toEqual({
      field: ['payload', ...Array(BODY_LIMITS.maxDepth - 1).fill('0')].join('.'),
      message: 'payload is nested deeper than the limit of 64 levels (the body is level 1)',
    });
  });

  it('scans a body nested 100,000 levels without recursion', () => {
    expect(checkBodyShape({ x: nested(100_000) })?.message).toMatch(/^x is nested deeper than/);
  });

  it('bounds the properties of an object and the items of an array, naming the field', () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    expect(checkBodyShape(keys(BODY_LIMITS.maxProperties))).toBeUndefined();
    expect(checkBodyShape(keys(BODY_LIMITS.maxProperties + 1))).toEqual({
      field: 'body',
      message: `body must have no more than ${BODY_LIMITS.maxProperties} properties`,
    });
    expect(checkBodyShape({ a: [{ b: Array(BODY_LIMITS.maxItems + 1).fill(0) }] })).toEqual({
      field: 'a.0.b',
      message: `b must contain no more than ${BODY_LIMITS.maxItems} elements`,
    });
  });

  it('cuts a long key in the field it names', () => {
    const key = 'k'.repeat(10_000);
    const problem = checkBodyShape({ [key]: nested(BODY_LIMITS.maxDepth) });
    expect(problem!.field.length).toBeLessThanOrEqual(200);
    expect(problem!.message.length).toBeLessThan(400);
  });
});

/** A document with the shapes the coordinator's DTOs produce. */
const DOCUMENT = {
  openapi: '3.0.3',
  info: { title: 't', version: '1' },
  paths: {
    '/v1/{ns}/things': {
      post: {
        parameters: [
          { in: 'path', name: 'ns', required: true, schema: { type: 'string', pattern: '^[a-z]+$' } },
          { in: 'query', name: 'limit', required: false, schema: { type: 'integer', minimum: 1 } },
          { in: 'query', name: 'token', required: true, schema: { type: 'string', pattern: '^[a-z]+$' } },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ThingDto' } } },
        },
        responses: {},
      },
    },
  },
  components: {
    schemas: {
      ThingDto: {
        type: 'object',
        required: ['attempt', 'deps'],
        properties: {
          attempt: { type: 'integer', minimum: 1, maximum: 100, description: 'd', default: 1 },
          deps: { type: 'array', maxItems: 3, items: { $ref: '#/components/schemas/EntryDto' } },
          headers: {
            type: 'object',
            additionalProperties: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
          },
          limit: { allOf: [{ $ref: '#/components/schemas/LimitDto' }], nullable: true, description: 'd' },
          payload: { nullable: true, description: 'any JSON value' },
          mode: { type: 'string', enum: ['a', 'b'], format: 'x-anything', example: 'a' },
        },
      },
      EntryDto: {
        type: 'object',
        required: ['dep'],
        properties: {
          dep: { type: 'string', pattern: '^[a-z]+$' },
          counts: { type: 'array', items: { type: 'integer', minimum: 0 } },
        },
      },
      LimitDto: { type: 'object', required: ['rate'], properties: { rate: { type: 'integer', minimum: 1 } } },
    },
  },
} as unknown as OpenAPIObject;

describe('compiled request validation', () => {
  const validators = compileRequestValidators(DOCUMENT);
  const good = { attempt: 1, deps: [{ dep: 'a', counts: [0, 1] }] };

  /** The details of the 400 for this request, or [] when it passes. */
  const detailsFor = (body: unknown, query: Record<string, unknown> = { token: 'abc' }, params = { ns: 'shop' }) => {
    const request = {
      method: 'POST',
      routeOptions: { url: '/v1/:ns/things' },
      params,
      body,
      query,
    } as unknown as FastifyRequest;
    try {
      validateRequest(validators, request);
      return [];
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      expect(error.getStatus()).toBe(400);
      return error.details ?? [];
    }
  };

  it('keys validators by method and Fastify route', () => {
    expect([...validators.keys()]).toEqual(['POST /v1/:ns/things']);
  });

  it('accepts what the schema allows: maps of headers, null where nullable, any payload', () => {
    expect(detailsFor(good)).toEqual([]);
    expect(detailsFor({ ...good, headers: { 'x-a': 'v', 'set-cookie': ['a', 'b'] } })).toEqual([]);
    expect(detailsFor({ ...good, limit: null, payload: null, mode: 'b' })).toEqual([]);
    expect(detailsFor({ ...good, limit: { rate: 2 }, payload: { any: [{ thing: true }] } })).toEqual([]);
    expect(detailsFor(good, { token: 'abc', limit: '7' })).toEqual([]);
  });

  it.each([
    ['a missing field', { deps: [] }, 'attempt', 'attempt is required'],
    ['a wrong type', { ...good, attempt: '1' }, 'attempt', 'attempt must be an integer number'],
    ['a number past its maximum', { ...good, attempt: 101 }, 'attempt', 'attempt must not be greater than 100'],
    ['null where not nullable', { ...good, mode: null }, 'mode', 'mode must be a string'],
    ['a value not in the enum', { ...good, mode: 'c' }, 'mode', 'mode must be one of the following values: a, b'],
    ['an unknown property', { ...good, priority: 1 }, 'priority', 'property priority should not exist'],
    ['an unknown nested property', { ...good, deps: [{ dep: 'a', region: 'eu' }] }, 'deps.0.region', undefined],
    ['a bad nested field', { ...good, deps: [{ dep: 'A' }] }, 'deps.0.dep', 'must match ^[a-z]+$'],
    ['an entry that is not an object', { ...good, deps: [{ dep: 'a' }, null] }, 'deps.1', 'deps.1 must be an object'],
    ['a bad item of a number array', { ...good, deps: [{ dep: 'a', counts: [0, -1] }] }, 'deps.0.counts', undefined],
    ['too many entries', { ...good, deps: [1, 2, 3, 4] }, 'deps', 'deps must contain no more than 3 elements'],
    ['a header value of the wrong type', { ...good, headers: { 'x-a': 1 } }, 'headers.x-a', undefined],
    ['a bad field of a nullable object', { ...good, limit: { rate: 0 } }, 'limit.rate', undefined],
  ])('refuses %s, naming %s', (_what, body, field, message) => {
    const details = detailsFor(body);
    expect(details.map((detail) => detail.field)).toEqual([field]);
    if (message) expect(details[0].message).toBe(message);
  });

  it('words a bad array item and a composite as class-validator does', () => {
    expect(detailsFor({ ...good, deps: [{ dep: 'a', counts: [0, -1] }] })[0].message).toBe(
      'each value in counts must not be less than 0',
    );
    expect(detailsFor({ ...good, headers: { 'x-a': 1 } })[0].message).toBe('x-a must be a string or an array');
  });

  it('names one unknown key of 20,000, and cuts a long one', () => {
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]));
    expect(detailsFor({ ...good, ...many }).length).toBe(1);
    const [detail] = detailsFor({ ...good, ['k'.repeat(100_000)]: 1 });
    expect(detail.field.length).toBeLessThanOrEqual(200);
    expect(detail.message.length).toBeLessThan(300);
  });

  it('checks the path first, in the wording of the DTOs', () => {
    expect(detailsFor({}, {}, { ns: 'Shop' })).toEqual([{ field: 'ns', message: 'must match ^[a-z]+$' }]);
  });

  it('checks the query string: no unknown parameter, one value each, string rules', () => {
    expect(detailsFor(good, { token: 'abc', force: '1' })).toEqual([
      { field: 'force', message: 'property force should not exist' },
    ]);
    expect(detailsFor(good, { token: ['a', 'b'] })).toEqual([{ field: 'token', message: 'token must be given once' }]);
    expect(detailsFor(good, { token: 'ABC' }).map((detail) => detail.field)).toEqual(['token']);
    expect(detailsFor(good, {})).toEqual([{ field: 'token', message: 'token is required' }]);
    // A number's range is the pipe's, once the string is converted.
    expect(detailsFor(good, { token: 'abc', limit: '0' })).toEqual([]);
  });

  it('leaves a route it has no schema for alone; the shape check takes every matched route', () => {
    const request = (body: unknown, routeOptions: { url?: string }) =>
      ({ method: 'POST', routeOptions, body, query: {} }) as unknown as FastifyRequest;
    expect(() => validateRequest(validators, request({ anything: 1 }, { url: '/health' }))).not.toThrow();
    expect(shapeError(request({ x: nested(100) }, { url: '/health' }))?.getStatus()).toBe(400);
    // No route matched: the 404 says so, whatever the body.
    expect(shapeError(request({ x: nested(100) }, {}))).toBeUndefined();
  });
});

describe('JsonShapeScanner', () => {
  /** The scanner's verdict on `text`, fed in chunks of `size` bytes. */
  const scan = (text: string, size = 7) => {
    const scanner = new JsonShapeScanner();
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += size) {
      const problem = scanner.write(bytes.subarray(at, at + size));
      if (problem) return problem;
    }
    return undefined;
  };

  it('finds what checkBodyShape finds in the parsed body, whatever the chunks', () => {
    const bodies: unknown[] = [
      { attempt: 1, deps: [{ dep: 'a', latency: { boundsMs: [1, 2], counts: [0, 0, 0] } }] },
      { payload: nested(BODY_LIMITS.maxDepth - 1), 'k"e\\y': '{[,]}', s: 'a,b,c,[[[[' },
      { payload: nested(BODY_LIMITS.maxDepth) },
      { 'a"b\u00e9': [{ 'c\\d': nested(BODY_LIMITS.maxDepth) }] },
      Object.fromEntries(Array.from({ length: BODY_LIMITS.maxProperties }, (_, i) => [`k${i}`, [i]])),
      Object.fromEntries(Array.from({ length: BODY_LIMITS.maxProperties + 1 }, (_, i) => [`k${i}`, i])),
      { a: { b: [Array(BODY_LIMITS.maxItems).fill(0)] } },
      { a: { b: [Array(BODY_LIMITS.maxItems + 1).fill('x,y')] } },
    ];
    for (const body of bodies) {
      for (const size of [1, 7, 4096]) expect(scan(JSON.stringify(body), size)).toEqual(checkBodyShape(body));
    }
  });

  it('stops at the first limit passed, before the rest of the body arrives', () => {
    const scanner = new JsonShapeScanner();
    expect(scanner.write(Buffer.from(`{"x":${'['.repeat(BODY_LIMITS.maxDepth)}`))).toMatchObject({
      field: expect.stringMatching(/^x\.0\.0/),
    });
  });

  it('leaves malformed text to the parser', () => {
    expect(scan(']]]}}}{"a":1')).toBeUndefined();
    expect(scan('"unterminated [[[[')).toBeUndefined();
  });
});
