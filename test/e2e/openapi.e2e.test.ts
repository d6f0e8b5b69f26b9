import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type {
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger';
import request from 'supertest';
import { formatDocument } from '../../apps/coordinator/src/openapi/generate';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

// The OpenAPI document against the app itself: every route Fastify registered is documented (and
// nothing else), with the security the guard enforces, the request schemas the validation pipe
// enforces, the API's status codes, and response schemas the real answers conform to. The committed
// deploy/openapi.json is what the app serves.

const ROOT = join(__dirname, '../..');
const COMMITTED = join(ROOT, 'deploy/openapi.json');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
type Schema = SchemaObject | ReferenceObject;

interface Operation {
  method: string;
  path: string;
  operation: OperationObject;
}

/** Every route Fastify registered, from its route tree (children print the rest of their parent's path). */
function registeredRoutes(app: NestFastifyApplication): Array<{ method: string; url: string }> {
  const tree = app.getHttpAdapter().getInstance().printRoutes({ commonPrefix: false });
  const parents: string[] = [];
  const routes: Array<{ method: string; url: string }> = [];
  for (const line of tree.split('\n')) {
    const match = /^(.*?)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    const url = (depth > 0 ? parents[depth - 1] : '') + match[2];
    parents[depth] = url;
    parents.length = depth + 1;
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, url });
  }
  return routes;
}

function operationsOf(document: OpenAPIObject): Operation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) =>
      item[method] ? [{ method: method.toUpperCase(), path, operation: item[method] }] : [],
    ),
  );
}

const key = (method: string, path: string) => `${method} ${path}`;
const templated = (url: string) => url.replace(/:([A-Za-z]+)/g, '{$1}');

const SAMPLE_PARAMS: Record<string, string> = {
  ns: 'shop',
  dep: 'payments-api',
  limit: 'checkout',
  queue: 'emails',
  key: 'order-42',
  id: 'msg-1',
};
const urlOf = (path: string, params: Record<string, string> = {}) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? SAMPLE_PARAMS[name]);

/** the API's status codes, route by route: the success answers first, then the errors. */
const STATUSES: Record<string, number[]> = {
  'POST /v1/{ns}/deps/{dep}/retry': [200, 400, 401, 403, 413, 415, 422, 503],
  'POST /v1/{ns}/deps/{dep}/admit': [200, 400, 401, 403, 413, 415, 422, 503],
  'DELETE /v1/{ns}/deps/{dep}/leases/{id}': [204, 400, 401, 403, 404, 503],
  'POST /v1/{ns}/deps/{dep}/leases/{id}/renew': [200, 400, 401, 403, 404, 503],
  'POST /v1/{ns}/reports': [200, 400, 401, 403, 413, 415, 422, 503],
  'POST /v1/{ns}/retries': [200, 400, 401, 403, 413, 415, 422, 503],
  'GET /v1/{ns}/deps/{dep}': [200, 304, 400, 401, 403, 503],
  'GET /v1/{ns}/deps/{dep}/history': [200, 400, 401, 403, 503],
  'GET /v1/{ns}/events': [200, 400, 401, 403, 503],
  'POST /v1/{ns}/limits/{limit}/take': [200, 400, 401, 403, 404, 413, 415, 422, 503],
  'POST /v1/{ns}/idempotency/{key}/claim': [200, 201, 400, 401, 403, 409, 413, 415, 422, 503],
  'PUT /v1/{ns}/idempotency/{key}': [204, 400, 401, 403, 409, 413, 415, 503],
  'DELETE /v1/{ns}/idempotency/{key}': [204, 400, 401, 403, 409, 503],
  'GET /v1/{ns}/idempotency/{key}': [200, 400, 401, 403, 404, 503],
  'POST /v1/{ns}/queues/{queue}/attempts': [200, 400, 401, 403, 413, 415, 422, 503],
  'POST /v1/{ns}/queues/{queue}/acks': [204, 400, 401, 403, 413, 415, 503],
  'GET /admin/v1/namespaces': [200, 400, 401, 403, 503],
  'GET /admin/v1/{ns}/breakers': [200, 400, 401, 403, 503],
  'GET /admin/v1/{ns}/budgets': [200, 400, 401, 403, 503],
  'POST /admin/v1/{ns}/breakers/{dep}/trip': [200, 400, 401, 403, 413, 415, 422, 503],
  'POST /admin/v1/{ns}/breakers/{dep}/force-close': [200, 400, 401, 403, 413, 415, 422, 503],
  'POST /admin/v1/{ns}/breakers/{dep}/reset': [200, 400, 401, 403, 413, 415, 422, 503],
  'GET /admin/v1/{ns}/queues': [200, 400, 401, 403, 503],
  'GET /admin/v1/{ns}/queues/{queue}/dead-letters': [200, 400, 401, 403, 503],
  'POST /admin/v1/{ns}/queues/{queue}/dead-letters/{id}/redrive': [200, 400, 401, 403, 404, 503],
  'DELETE /admin/v1/{ns}/queues/{queue}/dead-letters/{id}': [204, 400, 401, 403, 404, 503],
  'GET /admin/v1/audit': [200, 400, 401, 403, 503],
  'GET /admin/v1/{ns}/policies': [200, 400, 401, 403, 503],
  'GET /': [200],
  'GET /health/live': [200],
  'GET /health/ready': [200, 503],
  'GET /metrics': [200],
};
for (const path of [
  '/admin/v1/{ns}/policies/default',
  '/admin/v1/{ns}/policies/deps/{dep}',
  '/admin/v1/{ns}/policies/limits/{limit}',
  '/admin/v1/{ns}/policies/queues/{queue}',
]) {
  STATUSES[`GET ${path}`] = [200, 400, 401, 403, 404, 503];
  STATUSES[`PUT ${path}`] = [200, 400, 401, 403, 412, 413, 415, 422, 503];
  STATUSES[`DELETE ${path}`] = [204, 400, 401, 403, 404, 412, 503];
}

describe('OpenAPI document', () => {
  let coordinator: TestCoordinator;
  let app: NestFastifyApplication;
  let server: ReturnType<NestFastifyApplication['getHttpServer']>;
  let document: OpenAPIObject;
  let operations: Operation[];
  const admin = bearer(ADMIN_TOKEN);
  const client = bearer(SHOP_TOKEN);

  beforeAll(async () => {
    coordinator = await testCoordinator({ config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN] } });
    ({ app, server } = coordinator);
    const res = await request(server).get('/docs-json').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    document = JSON.parse(res.text) as OpenAPIObject;
    operations = operationsOf(document);
  });

  afterAll(() => coordinator?.close());

  const operation = (method: string, path: string): OperationObject => {
    const found = operations.find((entry) => entry.method === method && entry.path === path);
    if (!found) throw new Error(`${method} ${path} is not documented`);
    return found.operation;
  };

  const resolve = (schema: Schema | undefined): SchemaObject => {
    if (!schema) throw new Error('no schema');
    if (!('$ref' in schema)) return schema.allOf?.length === 1 ? resolve(schema.allOf[0]) : schema;
    const name = schema.$ref.replace('#/components/schemas/', '');
    const found = document.components?.schemas?.[name];
    if (!found) throw new Error(`no schema ${name}`);
    return resolve(found);
  };

  const bodySchema = (method: string, path: string): SchemaObject => {
    const body = operation(method, path).requestBody as { content: Record<string, { schema: Schema }> };
    return resolve(body.content['application/json'].schema);
  };

  const responseOf = (method: string, path: string, status: number): ResponseObject => {
    const response = operation(method, path).responses[String(status)] as ResponseObject | undefined;
    if (!response) throw new Error(`${method} ${path} documents no ${status}`);
    return response;
  };

  it('serves the Swagger UI and the document without a token, though tokens are configured', async () => {
    const html = await request(server).get('/docs').expect(200);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.text).toContain('swagger-ui');
    const init = await request(server).get('/docs/swagger-ui-init.js').expect(200);
    expect(init.text).toMatch(/"openapi": "3\.0\.3"/);
    await request(server).get('/docs/swagger-ui-bundle.js').expect(200);
    await request(server).get('/docs-json').set('authorization', 'Bearer not-a-token').expect(200);
    // The API itself still wants one.
    await request(server).get('/v1/shop/deps/payments-api').expect(401);
  });

  it('documents every route the app registers, and no other', () => {
    const registered = registeredRoutes(app).filter(
      (route) => !['HEAD', 'OPTIONS'].includes(route.method) && !/^\/(?:docs|console)(?:$|[/*-])/.test(route.url),
    );
    const fastify = app.getHttpAdapter().getInstance();
    for (const route of registered) expect(fastify.hasRoute(route)).toBe(true);
    expect(registered.length).toBeGreaterThanOrEqual(38);

    const documented = operations.map((entry) => key(entry.method, entry.path)).sort();
    expect(documented).toEqual(registered.map((route) => key(route.method, templated(route.url))).sort());
    expect(Object.keys(STATUSES).sort()).toEqual(documented);
  });

  it('gives every operation a unique id, a summary, a known tag and its path parameters with their patterns', () => {
    const ids = operations.map((entry) => entry.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set((document.tags ?? []).map((tag) => tag.name));
    for (const { method, path, operation: op } of operations) {
      const where = key(method, path);
      expect([where, op.summary]).toEqual([where, expect.any(String)]);
      expect([where, op.tags?.length === 1 && tags.has(op.tags[0])]).toEqual([where, true]);
      const parameters = (op.parameters ?? []) as ParameterObject[];
      const inPath = parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
      expect([where, inPath]).toEqual([where, [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])]);
      for (const parameter of parameters.filter((p) => p.in === 'path')) {
        expect([where, parameter.required, (parameter.schema as SchemaObject).pattern]).toEqual([
          where,
          true,
          expect.any(String),
        ]);
      }
      for (const [status, response] of Object.entries(op.responses)) {
        expect([where, status, (response as ResponseObject).description]).toEqual([where, status, expect.any(String)]);
      }
    }
    expect(resolve({ $ref: '#/components/schemas/ErrorBody' }).required).toEqual(['statusCode', 'code', 'message']);
  });

  it('documents the security each route enforces: bearer (401 without a token, 403 out of scope) or none', async () => {
    expect(document.components?.securitySchemes?.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { method, path, operation: op } of operations) {
      const where = key(method, path);
      const test = () => request(server)[method.toLowerCase() as 'get'](urlOf(path));
      const anonymous = await test();
      if (op.security?.length === 0) {
        expect([where, anonymous.status < 400]).toEqual([where, true]);
        continue;
      }
      expect([where, op.security]).toEqual([where, [{ bearer: [] }]]);
      expect([where, anonymous.status, anonymous.body.code]).toEqual([where, 401, 'unauthorized']);
      expect([where, responseOf(method, path, 401).headers?.['WWW-Authenticate']]).toEqual([where, expect.anything()]);
      // A client token: never an admin route, never another namespace.
      const outOfScope = path.startsWith('/admin/')
        ? await test().set(client)
        : await request(server)
            [method.toLowerCase() as 'get'](urlOf(path, { ns: 'other' }))
            .set(client);
      expect([where, outOfScope.status, outOfScope.body.code]).toEqual([where, 403, 'forbidden']);
    }
    for (const path of ['/', '/metrics', '/health/live', '/health/ready']) {
      expect(operation('GET', path).security).toEqual([]);
    }
  });

  it('documents the API status codes on every route, errors with the error body', () => {
    for (const { method, path, operation: op } of operations) {
      const where = key(method, path);
      expect([where, Object.keys(op.responses).map(Number)]).toEqual([where, STATUSES[where]]);
      for (const [status, response] of Object.entries(op.responses) as Array<[string, ResponseObject]>) {
        if (Number(status) < 400 || path.startsWith('/health')) continue;
        const schema = response.content?.['application/json']?.schema as ReferenceObject;
        expect([where, status, schema.$ref]).toEqual([where, status, expect.stringMatching(/ErrorBody|InFlightBody/)]);
        expect([where, status, response.description]).toEqual([
          where,
          status,
          expect.stringMatching(/^(- )?`[a-z_]+`/),
        ]);
      }
    }
  });

  it('says what each error means where the API is specific', () => {
    const retryAfter = (method: string, path: string, status: number) =>
      responseOf(method, path, status).headers?.['Retry-After'];
    for (const path of ['/v1/{ns}/deps/{dep}/retry', '/v1/{ns}/deps/{dep}/admit', '/v1/{ns}/limits/{limit}/take']) {
      expect(responseOf('POST', path, 503).description).toMatch(/store_unavailable.*fallback/);
      expect(retryAfter('POST', path, 503)).toMatchObject({ schema: { type: 'integer' } });
      expect(operation('POST', path).description).toContain('`allow: false`');
    }
    expect(responseOf('POST', '/v1/{ns}/deps/{dep}/retry', 422).description).toContain('too_many_dependencies');
    expect(operation('POST', '/v1/{ns}/deps/{dep}/retry').description).toMatch(
      /not_retriable.*not_idempotent.*enforced even in shadow mode/s,
    );
    expect(responseOf('POST', '/v1/{ns}/reports', 422).description).toContain('deps.{i}.dep');
    expect(responseOf('POST', '/v1/{ns}/reports', 422).description).toContain('too_many_namespaces');
    expect(responseOf('POST', '/v1/{ns}/deps/{dep}/retry', 503).description).toContain('`overloaded`');

    const claim = '/v1/{ns}/idempotency/{key}/claim';
    expect(responseOf('POST', claim, 201).content?.['application/json'].schema).toEqual(ref('IdempotencyClaimed'));
    expect(responseOf('POST', claim, 200).content?.['application/json'].schema).toEqual(ref('IdempotencyCompleted'));
    expect(responseOf('POST', claim, 409).content?.['application/json'].schema).toEqual(ref('InFlightBody'));
    expect(retryAfter('POST', claim, 409)).toBeDefined();
    expect(responseOf('POST', claim, 422).description).toContain('fingerprint_mismatch');
    expect(responseOf('PUT', '/v1/{ns}/idempotency/{key}', 409).description).toContain('lease_lost');
    expect(responseOf('PUT', '/v1/{ns}/idempotency/{key}', 413).description).toMatch(/256 KiB/);

    const take = responseOf('POST', '/v1/{ns}/limits/{limit}/take', 200).headers ?? {};
    expect(Object.keys(take).sort()).toEqual([
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Retry-After',
    ]);

    const view = operation('GET', '/v1/{ns}/deps/{dep}');
    expect(responseOf('GET', '/v1/{ns}/deps/{dep}', 200).headers?.ETag).toBeDefined();
    expect((view.parameters as ParameterObject[]).map((p) => `${p.in}:${p.name}`)).toContain('header:If-None-Match');

    const policy = '/admin/v1/{ns}/policies/deps/{dep}';
    expect(responseOf('GET', policy, 200).headers?.ETag).toBeDefined();
    expect(responseOf('PUT', policy, 200).headers?.ETag).toBeDefined();
    expect(responseOf('PUT', policy, 412).description).toContain('precondition_failed');
    expect(responseOf('PUT', policy, 412).headers?.ETag).toBeDefined();
    expect((operation('PUT', policy).parameters as ParameterObject[]).map((p) => `${p.in}:${p.name}`)).toEqual([
      'path:ns',
      'path:dep',
      'query:reason',
      'header:If-Match',
      'header:If-None-Match',
    ]);

    expect(Object.keys(responseOf('GET', '/v1/{ns}/events', 200).content ?? {})).toEqual(['text/event-stream']);
    expect(Object.keys(responseOf('GET', '/metrics', 200).content ?? {})).toEqual(['text/plain']);
    expect(Object.keys(responseOf('GET', '/', 200).content ?? {})).toEqual(['application/json', 'text/html']);
    expect(responseOf('GET', '/health/ready', 503).content?.['application/json'].schema).toEqual(ref('Readiness'));
    for (const name of ['BreakerEvent', 'PolicyEvent']) expect(document.components?.schemas?.[name]).toBeDefined();
  });

  it('derives request bodies from the DTOs\u2019 validation rules', () => {
    const retry = bodySchema('POST', '/v1/{ns}/deps/{dep}/retry');
    expect(retry.required).toEqual(['attempt']);
    expect(retry.properties).toMatchObject({
      attempt: { type: 'integer', minimum: 1, maximum: 100 },
      idempotent: { type: 'boolean', default: false },
      status: { type: 'integer', minimum: 100, maximum: 599 },
      error: { type: 'string', enum: ['timeout', 'connection', 'other'] },
    });

    const report = bodySchema('POST', '/v1/{ns}/reports');
    expect(report.required).toEqual(['reporter', 'deps']);
    expect(report.properties?.deps).toMatchObject({ type: 'array', maxItems: 100 });
    const entry = resolve((report.properties?.deps as SchemaObject).items);
    expect(entry.required).toEqual(['dep', 'requests', 'successes', 'failures', 'slow']);
    expect(entry.properties?.dep).toMatchObject({ pattern: '^[a-z0-9][a-z0-9._-]{0,127}$' });
    expect(resolve((entry.properties?.probes as SchemaObject).items).required).toEqual(['token', 'success']);
    expect(resolve(entry.properties?.latency).properties?.counts).toMatchObject({ minItems: 2, maxItems: 65 });

    const admit = operation('POST', '/v1/{ns}/deps/{dep}/admit').requestBody as { required: boolean };
    expect(admit.required).toBe(false);
    expect(bodySchema('POST', '/v1/{ns}/deps/{dep}/admit').properties?.cost).toMatchObject({ minimum: 1, default: 1 });
    expect(bodySchema('POST', '/v1/{ns}/limits/{limit}/take').required).toEqual(['key']);
    expect(bodySchema('POST', '/v1/{ns}/idempotency/{key}/claim')).toMatchObject({
      required: ['fingerprint'],
      properties: { leaseMs: { minimum: 100, default: 30000 }, retentionSeconds: { minimum: 1, maximum: 604800 } },
    });
    const complete = bodySchema('PUT', '/v1/{ns}/idempotency/{key}');
    expect(complete.required).toEqual(['token', 'response']);
    expect(resolve(complete.properties?.response)).toMatchObject({
      required: ['status', 'headers', 'body'],
      properties: { bodyEncoding: { enum: ['utf8', 'base64'], default: 'utf8' } },
    });
    expect(bodySchema('POST', '/v1/{ns}/queues/{queue}/attempts')).toMatchObject({
      required: ['messageId'],
      properties: { payload: { nullable: true } },
    });
    expect(bodySchema('POST', '/admin/v1/{ns}/breakers/{dep}/trip')).toMatchObject({
      required: ['reason'],
      properties: { durationSeconds: { minimum: 1, maximum: 2_592_000 } },
    });

    const policy = bodySchema('PUT', '/admin/v1/{ns}/policies/deps/{dep}');
    expect(policy.required).toBeUndefined();
    expect(policy.properties?.rateLimit).toMatchObject({ nullable: true, allOf: [ref('RateLimitPolicyDto')] });
    expect(resolve(policy.properties?.retryBudget).properties?.maxAttempts).toMatchObject({ minimum: 1, maximum: 100 });
    expect(bodySchema('PUT', '/admin/v1/{ns}/policies/limits/{limit}').required).toEqual(['rate', 'periodMs', 'burst']);
    expect(bodySchema('PUT', '/admin/v1/{ns}/policies/queues/{queue}').properties?.maxAttempts).toMatchObject({
      minimum: 1,
      maximum: 1000,
    });

    const queryOf = (method: string, path: string) =>
      (operation(method, path).parameters as ParameterObject[]).filter((p) => p.in === 'query');
    expect(queryOf('DELETE', '/v1/{ns}/idempotency/{key}')).toMatchObject([{ name: 'token', required: true }]);
    expect(queryOf('GET', '/admin/v1/audit')).toMatchObject([
      { name: 'ns', required: false },
      { name: 'limit', required: false, schema: { minimum: 1, maximum: 1000 } },
    ]);
    expect(queryOf('GET', '/v1/{ns}/events')).toMatchObject([{ name: 'deps', required: false }]);
  });

  it('answers what the document says: statuses and bodies that conform to the response schemas', async () => {
    interface Call {
      body?: object;
      headers?: Record<string, string>;
      query?: Record<string, string>;
    }
    const call = async (method: string, path: string, params: Record<string, string>, options: Call = {}) => {
      const where = key(method, path);
      const res = await request(server)
        [method.toLowerCase() as 'post'](urlOf(path, params))
        .query(options.query ?? {})
        .set(admin)
        .set(options.headers ?? {})
        .send(options.body);
      const schema = responseOf(method, path, res.status).content?.['application/json']?.schema;
      if (schema) expect([where, res.status, conforms(schema, res.body)]).toEqual([where, res.status, []]);
      else expect([where, res.status, res.text]).toEqual([where, res.status, '']);
      return res;
    };
    const p = { ns: 'docs', dep: 'payments-api' };
    const policy = '/admin/v1/{ns}/policies/deps/{dep}';
    await call('GET', policy, p);
    const stored = await call('PUT', policy, p, {
      body: { concurrency: { limit: 2, leaseMs: 5000 }, rateLimit: null },
    });
    expect(stored.headers.etag).toMatch(/^"\d+"$/);
    await call('PUT', policy, p, { body: { mode: 'shadow' }, headers: { 'if-match': '"999"' } });
    await call('GET', policy, p);
    await call('PUT', '/admin/v1/{ns}/policies/default', p, {
      body: { backoff: { baseMs: 10 } },
      headers: { 'if-none-match': '*' },
    });
    const limit = { ...p, limit: 'checkout' };
    await call('PUT', '/admin/v1/{ns}/policies/limits/{limit}', limit, { body: { rate: 5, periodMs: 1000, burst: 2 } });
    const queue = { ...p, queue: 'emails' };
    await call('PUT', '/admin/v1/{ns}/policies/queues/{queue}', queue, { body: { maxAttempts: 2 } });

    await call('POST', '/v1/{ns}/deps/{dep}/retry', p, { body: { attempt: 1, idempotent: true, status: 503 } });
    await call('POST', '/v1/{ns}/deps/{dep}/retry', p, { body: { attempt: 101 } });
    const admitted = await call('POST', '/v1/{ns}/deps/{dep}/admit', p);
    const lease = { ...p, id: admitted.body.lease.id as string };
    await call('POST', '/v1/{ns}/deps/{dep}/leases/{id}/renew', lease);
    await call('DELETE', '/v1/{ns}/deps/{dep}/leases/{id}', lease);
    await call('DELETE', '/v1/{ns}/deps/{dep}/leases/{id}', lease);
    await call('POST', '/v1/{ns}/reports', p, {
      body: {
        reporter: 'checkout-1',
        deps: [
          {
            dep: 'payments-api',
            requests: 10,
            successes: 9,
            failures: 1,
            slow: 0,
            latency: { boundsMs: [10, 100], counts: [5, 4, 1] },
          },
        ],
      },
    });
    const view = await call('GET', '/v1/{ns}/deps/{dep}', p);
    await call('GET', '/v1/{ns}/deps/{dep}', p, { headers: { 'if-none-match': view.headers.etag } });
    const history = await call('GET', '/v1/{ns}/deps/{dep}/history', p);
    expect(history.body.points).toHaveLength(1);

    await call('POST', '/v1/{ns}/limits/{limit}/take', limit, { body: { key: 'user-1', cost: 2 } });
    const denied = await call('POST', '/v1/{ns}/limits/{limit}/take', limit, { body: { key: 'user-1' } });
    expect(denied.body.allow).toBe(false);
    expect(denied.headers['retry-after']).toMatch(/^\d+$/);
    await call('POST', '/v1/{ns}/limits/{limit}/take', { ...p, limit: 'nowhere' }, { body: { key: 'user-1' } });

    const idem = { ...p, key: 'order-1' };
    const claim = '/v1/{ns}/idempotency/{key}/claim';
    const claimed = await call('POST', claim, idem, { body: { fingerprint: 'sha256:a' } });
    await call('POST', claim, idem, { body: { fingerprint: 'sha256:a' } });
    await call('GET', '/v1/{ns}/idempotency/{key}', idem);
    const response = { status: 201, headers: { 'set-cookie': ['a=1', 'b=2'], 'x-id': '7' }, body: '{}' };
    await call('PUT', '/v1/{ns}/idempotency/{key}', idem, { body: { token: 'not-the-token', response } });
    await call('PUT', '/v1/{ns}/idempotency/{key}', idem, { body: { token: claimed.body.token, response } });
    await call('POST', claim, idem, { body: { fingerprint: 'sha256:a' } });
    await call('POST', claim, idem, { body: { fingerprint: 'sha256:b' } });
    await call('GET', '/v1/{ns}/idempotency/{key}', idem);
    await call('GET', '/v1/{ns}/idempotency/{key}', { ...p, key: 'never-claimed' });
    const second = { ...p, key: 'order-2' };
    const held = await call('POST', claim, second, { body: { fingerprint: 'sha256:c' } });
    await call('DELETE', '/v1/{ns}/idempotency/{key}', second, { query: { token: held.body.token } });

    await call('POST', '/v1/{ns}/queues/{queue}/attempts', queue, {
      body: { messageId: 'm-1', error: 'boom', payload: { to: 'a' } },
    });
    await call('POST', '/v1/{ns}/queues/{queue}/attempts', queue, { body: { messageId: 'm-1' } });
    await call('POST', '/v1/{ns}/queues/{queue}/acks', queue, { body: { messageId: 'm-2' } });
    await call('GET', '/admin/v1/{ns}/queues/{queue}/dead-letters', queue);
    const queues = await call('GET', '/admin/v1/{ns}/queues', p);
    expect(queues.body.items).toEqual([expect.objectContaining({ queue: 'emails', deadLetters: 1 })]);
    await call('POST', '/admin/v1/{ns}/queues/{queue}/dead-letters/{id}/redrive', { ...queue, id: 'm-1' });
    await call('DELETE', '/admin/v1/{ns}/queues/{queue}/dead-letters/{id}', { ...queue, id: 'm-1' });

    await call('POST', '/admin/v1/{ns}/breakers/{dep}/trip', p, {
      body: { reason: 'incident 7', durationSeconds: 60 },
    });
    await call('POST', '/v1/{ns}/deps/{dep}/retry', p, { body: { attempt: 1, idempotent: true, status: 503 } });
    await call('POST', '/v1/{ns}/deps/{dep}/admit', p);
    const asks = [p.dep, 'search'].map((dep) => ({ dep, attempt: 1, idempotent: true }));
    const batch = await call('POST', '/v1/{ns}/retries', { ns: 'docs' }, { body: { asks } });
    expect(batch.body.decisions[0]).toMatchObject({ reason: 'breaker_open', retryAfterMs: expect.any(Number) });
    await call('GET', '/v1/{ns}/deps/{dep}', p);
    await call('GET', '/admin/v1/{ns}/breakers', p);
    await call('GET', '/admin/v1/{ns}/budgets', p);
    await call('GET', '/admin/v1/namespaces', {});
    await call('POST', '/admin/v1/{ns}/breakers/{dep}/reset', p);
    const audit = await call('GET', '/admin/v1/audit', {}, { query: { ns: 'docs' } });
    expect(audit.body.items).toContainEqual(expect.objectContaining({ action: 'breaker.trip', durationMs: 60_000 }));
    const documents = await call('GET', '/admin/v1/{ns}/policies', p, { query: { limit: '2' } });
    expect(documents.body.next).toBe('deps/payments-api');
    await call('GET', '/admin/v1/{ns}/policies', p, { query: { cursor: documents.body.next } });
    await call('GET', '/', {});
    await call('DELETE', policy, p, { headers: { 'if-match': '"999"' } });
    await call('DELETE', policy, p);
    await call('GET', '/health/live', {});
    await call('GET', '/health/ready', {});
  });

  it('is a valid OpenAPI 3.0 document', () => {
    // The validator is an ES module (it reads its schemas through import.meta): run it in a plain Node.
    const script =
      "import { Validator } from '@seriousme/openapi-schema-validator';" +
      'const chunks = []; for await (const chunk of process.stdin) chunks.push(chunk);' +
      'const result = await new Validator().validate(JSON.parse(Buffer.concat(chunks).toString()));' +
      'console.log(JSON.stringify(result));';
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      input: JSON.stringify(document),
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual({ valid: true });
    expect(document.openapi).toBe('3.0.3');
  });

  it('is committed as deploy/openapi.json exactly as the app serves it (npm run openapi)', () => {
    const committed = readFileSync(COMMITTED, 'utf8');
    if (committed !== formatDocument(document, COMMITTED)) {
      throw new Error('deploy/openapi.json is not what the app serves at /docs-json: run `npm run openapi`');
    }
    // Keys are sorted, so the file changes only when the API does.
    const keys = Object.keys(document.paths);
    expect(keys).toEqual([...keys].sort());
  });

  /** What is wrong with `value` against `schema` (no undeclared properties: the schemas are complete). */
  function conforms(schema: Schema, value: unknown, at = 'body'): string[] {
    const resolved = resolve(schema);
    if (value === null) return (schema as SchemaObject).nullable || resolved.nullable ? [] : [`${at}: null`];
    if (resolved.allOf) return resolved.allOf.flatMap((part) => conforms(part, value, at));
    if (resolved.oneOf) {
      return resolved.oneOf.some((part) => conforms(part, value, at).length === 0) ? [] : [`${at}: matches no oneOf`];
    }
    if (resolved.enum && !resolved.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in enum`];
    switch (resolved.type) {
      case 'integer':
        return Number.isInteger(value) ? [] : [`${at}: not an integer`];
      case 'number':
        return typeof value === 'number' ? [] : [`${at}: not a number`];
      case 'string':
      case 'boolean':
        return typeof value === resolved.type ? [] : [`${at}: not a ${resolved.type}`];
      case 'array':
        return Array.isArray(value)
          ? value.flatMap((item, i) => conforms(resolved.items!, item, `${at}.${i}`))
          : [`${at}: not an array`];
      case 'object': {
        if (typeof value !== 'object' || Array.isArray(value)) return [`${at}: not an object`];
        const record = value as Record<string, unknown>;
        const problems = (resolved.required ?? [])
          .filter((name) => !(name in record))
          .map((name) => `${at}.${name}: missing`);
        for (const [name, item] of Object.entries(record)) {
          const property = resolved.properties?.[name] ?? resolved.additionalProperties;
          if (!property) problems.push(`${at}.${name}: not documented`);
          else if (property !== true) problems.push(...conforms(property as Schema, item, `${at}.${name}`));
        }
        return problems;
      }
      default:
        return [];
    }
  }
});

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
