import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import request from 'supertest';
import { ADMIN_TOKEN, SHOP_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';
import { SHARED_REDIS_URL, deleteKeysWithPrefix, uniquePrefix } from '../support/redis';

/**
 * Bad input through the real app (tokens on, Redis store): malformed bodies, wrong types,
 * out-of-range numbers, bad names, oversized bodies, missing and wrong tokens. Every answer is the
 * documented 4xx with the API's error body and, for a 400, the field named (docs/api.md, Conventions);
 * the target dependency's budget is unchanged afterwards.
 */

const NS = 'shop';
const DEP = 'payments-api';
const RETRY = `/v1/${NS}/deps/${DEP}/retry`;
const REPORTS = `/v1/${NS}/reports`;
const VIEW = `/v1/${NS}/deps/${DEP}`;
/** Only ever the good entry of rejected reports: must read as never reported. */
const BYSTANDER = 'bystander-api';

const ADMIN = bearer(ADMIN_TOKEN).authorization;
const SHOP = bearer(SHOP_TOKEN).authorization;
const INVALID = 'validation_failed';
const ONE_MIB = 1024 * 1024;

/** A body sent as this exact text, not JSON-encoded by supertest. */
class Raw {
  constructor(
    readonly text: string,
    readonly contentType = 'application/json',
  ) {}
}

interface BadCase {
  name: string;
  method?: 'get' | 'post' | 'put' | 'delete';
  path: string;
  body?: unknown;
  /** Authorization header; default the shop client token; null sends none. */
  auth?: string | null;
  status: number;
  code: string;
  /** A `details` entry must name this field. */
  field?: string;
}

type BodyRow = [name: string, body: unknown, field: string];
const invalidBodies = (path: string, rows: BodyRow[]): BadCase[] =>
  rows.map(([name, body, field]) => ({ name, path, body, status: 400, code: INVALID, field }));

const retry = (fields: Record<string, unknown>) => ({ attempt: 1, idempotent: true, ...fields });
const good = (dep = DEP) => ({ dep, requests: 7, successes: 6, failures: 1, slow: 0 });
/** Two good entries (the target and the bystander), then `bad` merged into a third. */
const report = (bad: Record<string, unknown>) => ({
  reporter: 'checkout-7f9c',
  deps: [good(), good(BYSTANDER), { ...good('other-api'), ...bad }],
});
/** The field path of the bad entry's `name`. */
const at = (name = '') => (name ? `deps.2.${name}` : 'deps.2');

const retryCases = invalidBodies(RETRY, [
  ['empty object (attempt missing)', {}, 'attempt'],
  ['attempt missing', { idempotent: true }, 'attempt'],
  ['attempt "1" (string)', retry({ attempt: '1' }), 'attempt'],
  ['attempt 1.5', retry({ attempt: 1.5 }), 'attempt'],
  ['attempt 0', retry({ attempt: 0 }), 'attempt'],
  ['attempt 101', retry({ attempt: 101 }), 'attempt'],
  ['attempt -1', retry({ attempt: -1 }), 'attempt'],
  ['attempt null', retry({ attempt: null }), 'attempt'],
  ['attempt true', retry({ attempt: true }), 'attempt'],
  ['idempotent "true"', retry({ idempotent: 'true' }), 'idempotent'],
  ['idempotent 1', retry({ idempotent: 1 }), 'idempotent'],
  ['status 99', retry({ status: 99 }), 'status'],
  ['status 600', retry({ status: 600 }), 'status'],
  ['status "503"', retry({ status: '503' }), 'status'],
  ['status 503.5', retry({ status: 503.5 }), 'status'],
  ['error "boom"', retry({ error: 'boom' }), 'error'],
  ['error 1', retry({ error: 1 }), 'error'],
  ['deadlineMs -1', retry({ deadlineMs: -1 }), 'deadlineMs'],
  ['deadlineMs 1e15', retry({ deadlineMs: 1e15 }), 'deadlineMs'],
  ['deadlineMs 1e400 (Infinity)', new Raw('{"attempt": 1, "deadlineMs": 1e400}'), 'deadlineMs'],
  ['deadlineMs "800"', retry({ deadlineMs: '800' }), 'deadlineMs'],
  ['retryAfterMs -5', retry({ retryAfterMs: -5 }), 'retryAfterMs'],
  ['retryAfterMs 1e12', retry({ retryAfterMs: 1e12 }), 'retryAfterMs'],
  ['retryAfterMs 1.5', retry({ retryAfterMs: 1.5 }), 'retryAfterMs'],
  ['unknown property', retry({ priority: 'high' }), 'priority'],
]);

const reportCases = invalidBodies(REPORTS, [
  ['reporter missing', { deps: [good()] }, 'reporter'],
  ['reporter with a space and "!"', { reporter: 'bad reporter!', deps: [good()] }, 'reporter'],
  ['reporter empty', { reporter: '', deps: [good()] }, 'reporter'],
  ['reporter of 129 chars', { reporter: 'r'.repeat(129), deps: [good()] }, 'reporter'],
  ['reporter a number', { reporter: 7, deps: [good()] }, 'reporter'],
  ['deps missing', { reporter: 'r1' }, 'deps'],
  ['deps a string', { reporter: 'r1', deps: DEP }, 'deps'],
  ['deps an object', { reporter: 'r1', deps: good() }, 'deps'],
  ['deps with 101 entries', { reporter: 'r1', deps: Array.from({ length: 101 }, () => good()) }, 'deps'],
  ['entry null', { reporter: 'r1', deps: [good(), good(BYSTANDER), null] }, at()],
  ['entry a string', { reporter: 'r1', deps: [good(), good(BYSTANDER), 'other-api'] }, at()],
  ['entry without requests', report({ requests: undefined }), at('requests')],
  ['entry with negative failures', report({ failures: -1 }), at('failures')],
  ['entry with negative requests', report({ requests: -3 }), at('requests')],
  ['entry with non-integer successes', report({ successes: 1.5 }), at('successes')],
  ['entry with requests "5"', report({ requests: '5' }), at('requests')],
  ['entry with requests over 1e9', report({ requests: 1_000_000_001 }), at('requests')],
  ['entry with an uppercase dep', report({ dep: 'Payments' }), at('dep')],
  ['entry with dep "-api"', report({ dep: '-api' }), at('dep')],
  ['entry with a 129-char dep', report({ dep: 'd'.repeat(129) }), at('dep')],
  ['entry with dep a number', report({ dep: 42 }), at('dep')],
  ['entry with negative retries', report({ retries: -1 }), at('retries')],
  ['entry with retries "2"', report({ retries: '2' }), at('retries')],
  ['entry with slow > successes + failures', report({ successes: 2, failures: 1, slow: 4 }), at('slow')],
  ['entry with an unknown property', report({ region: 'eu' }), at('region')],
  ['latency counts one short', report({ latency: { boundsMs: [1, 2, 5], counts: [1, 2, 3] } }), at('latency.counts')],
  [
    'latency counts one too many',
    report({ latency: { boundsMs: [1, 2], counts: [1, 2, 3, 4] } }),
    at('latency.counts'),
  ],
  [
    'latency boundsMs not increasing',
    report({ latency: { boundsMs: [1, 5, 5], counts: [0, 0, 0, 0] } }),
    at('latency.boundsMs'),
  ],
  [
    'latency boundsMs decreasing',
    report({ latency: { boundsMs: [10, 2], counts: [0, 0, 0] } }),
    at('latency.boundsMs'),
  ],
  ['latency boundsMs with 0', report({ latency: { boundsMs: [0, 2], counts: [0, 0, 0] } }), at('latency.boundsMs')],
  ['latency counts negative', report({ latency: { boundsMs: [1, 2], counts: [0, -1, 0] } }), at('latency.counts')],
  ['latency without counts', report({ latency: { boundsMs: [1, 2] } }), at('latency.counts')],
  ['latency an array', report({ latency: [1, 2, 3] }), at('latency')],
  ['probes not an array', report({ probes: { token: 't', success: true } }), at('probes')],
  ['probe success "yes"', report({ probes: [{ token: 't', success: 'yes' }] }), at('probes.0.success')],
  ['probe success 1', report({ probes: [{ token: 't', success: 1 }] }), at('probes.0.success')],
  ['probe without token', report({ probes: [{ success: true }] }), at('probes.0.token')],
  ['unknown top-level property', { ...report({}), batch: 3 }, 'batch'],
]);

/** Names that break `^[a-z0-9][a-z0-9._-]{0,127}$`, sent with the admin token (every namespace). */
const badNames: Array<[what: string, ns: string, dep: string, field: 'ns' | 'dep']> = [
  ['uppercase namespace', 'SHOP', DEP, 'ns'],
  ['namespace starting with "-"', '-shop', DEP, 'ns'],
  ['namespace starting with "."', '.shop', DEP, 'ns'],
  ['namespace of 129 chars', 'n'.repeat(129), DEP, 'ns'],
  ['namespace with %20', 'sh%20op', DEP, 'ns'],
  ['uppercase dep', NS, 'Payments-API', 'dep'],
  ['dep starting with "-"', NS, '-payments', 'dep'],
  ['dep starting with "_"', NS, '_payments', 'dep'],
  ['dep of 129 chars', NS, 'd'.repeat(129), 'dep'],
  ['dep with %20', NS, 'pay%20ments', 'dep'],
  ['dep with an encoded "/"', NS, 'pay%2Fments', 'dep'],
  ['dep with "@"', NS, 'pay@ments', 'dep'],
  ['dep with non-ASCII', NS, 'pay%C3%A9', 'dep'],
];
const nameCases: BadCase[] = [
  ...badNames.flatMap(([what, ns, dep, field]): BadCase[] => [
    {
      name: `retry: ${what}`,
      path: `/v1/${ns}/deps/${dep}/retry`,
      body: retry({}),
      auth: ADMIN,
      status: 400,
      code: INVALID,
      field,
    },
    {
      name: `view: ${what}`,
      method: 'get',
      path: `/v1/${ns}/deps/${dep}`,
      auth: ADMIN,
      status: 400,
      code: INVALID,
      field,
    },
    ...(field === 'ns'
      ? [
          {
            name: `reports: ${what}`,
            path: `/v1/${ns}/reports`,
            body: report({}),
            auth: ADMIN,
            status: 400,
            code: INVALID,
            field,
          },
        ]
      : []),
  ]),
  // The client token on its own namespace also gets 400 for a bad dependency name.
  {
    name: 'client token: retry with uppercase dep',
    path: `/v1/${NS}/deps/PAY/retry`,
    body: retry({}),
    status: 400,
    code: INVALID,
    field: 'dep',
  },
  {
    name: 'client token: view with dep of 129 chars',
    method: 'get',
    path: `/v1/${NS}/deps/${'d'.repeat(129)}`,
    status: 400,
    code: INVALID,
    field: 'dep',
  },
  // A broken %-escape is refused by the router before any parameter exists: no field required,
  // but still the API's status, code and error body.
  {
    name: 'retry: dep with a broken %-escape',
    path: `/v1/${NS}/deps/pay%zz/retry`,
    body: retry({}),
    auth: ADMIN,
    status: 400,
    code: INVALID,
  },
  {
    name: 'view: dep with a broken %-escape',
    method: 'get',
    path: `/v1/${NS}/deps/pay%zz`,
    auth: ADMIN,
    status: 400,
    code: INVALID,
  },
  {
    name: 'reports: namespace with a broken %-escape',
    path: '/v1/sh%E0%A4%A/reports',
    body: report({}),
    auth: ADMIN,
    status: 400,
    code: INVALID,
  },
];

/** Bodies that are not a JSON object, or not JSON, or too large: the same on both POST routes. */
type EnvelopeRow = [name: string, body: unknown, status: number, code: string, field: string];
const envelopeRows = (sample: object): EnvelopeRow[] => [
  ['malformed JSON', new Raw('{"attempt": 1,'), 400, INVALID, 'body'],
  ['single-quoted JSON', new Raw("{'attempt': 1}"), 400, INVALID, 'body'],
  ['empty body with a JSON content-type', new Raw(''), 400, INVALID, 'body'],
  ['JSON array', [sample], 400, INVALID, 'body'],
  ['JSON string', new Raw('"attempt=1"'), 400, INVALID, 'body'],
  ['JSON number', new Raw('1'), 400, INVALID, 'body'],
  ['JSON null', new Raw('null'), 400, INVALID, 'body'],
  ['__proto__ key', new Raw('{"attempt": 1, "__proto__": {"idempotent": true}}'), 400, INVALID, 'body'],
  ['constructor.prototype key', new Raw('{"attempt": 1, "constructor": {"prototype": {}}}'), 400, INVALID, 'body'],
  ['text/plain', new Raw(JSON.stringify(sample), 'text/plain'), 415, INVALID, 'content-type'],
  ['application/xml', new Raw('<retry attempt="1"/>', 'application/xml'), 415, INVALID, 'content-type'],
  ['form-encoded', new Raw('attempt=1', 'application/x-www-form-urlencoded'), 415, INVALID, 'content-type'],
  [
    'body over 1 MiB',
    new Raw(JSON.stringify({ ...sample, pad: 'x'.repeat(ONE_MIB) })),
    413,
    'payload_too_large',
    'body',
  ],
];
const envelopeCases: BadCase[] = [
  ...(
    [
      ['retry', RETRY, retry({})],
      ['reports', REPORTS, report({})],
    ] as const
  ).flatMap(([what, path, sample]) =>
    envelopeRows(sample).map(([name, body, status, code, field]): BadCase => ({
      name: `${what}: ${name}`,
      path,
      body,
      status,
      code,
      field,
    })),
  ),
  // Just under the limit: read, then rejected for its field, not for its size.
  {
    name: 'reports: body just under 1 MiB with a bad reporter',
    path: REPORTS,
    body: new Raw(JSON.stringify({ ...report({}), reporter: 'x'.repeat(ONE_MIB - 400) })),
    status: 400,
    code: INVALID,
    field: 'reporter',
  },
];

const authRows: Array<[name: string, auth: string | null]> = [
  ['no Authorization', null],
  ['Bearer wrong', 'Bearer wrong'],
  ['Basic credentials', `Basic ${Buffer.from('ops:admin').toString('base64')}`],
  ['bare secret without "Bearer"', SHOP_TOKEN.secret],
  ['"Bearer" with no secret', 'Bearer '],
  ['empty Authorization', ''],
  ['secret with a suffix', `${SHOP}x`],
];
const authCases: BadCase[] = (
  [
    ['retry', 'post', RETRY, retry({})],
    ['reports', 'post', REPORTS, report({})],
    ['view', 'get', VIEW, undefined],
  ] as const
).flatMap(([what, method, path, body]): BadCase[] => [
  ...authRows.map(([name, auth]): BadCase => ({
    name: `${what}: ${name}`,
    method,
    path,
    body,
    auth,
    status: 401,
    code: 'unauthorized',
  })),
  {
    name: `${what}: client token on namespace "other"`,
    method,
    path: path.replace(`/v1/${NS}/`, '/v1/other/'),
    body,
    status: 403,
    code: 'forbidden',
  },
  {
    // Not a scope refusal: no namespace has that name, and the client token is told so.
    name: `${what}: client token on namespace "Shop" (not a name)`,
    method,
    path: path.replace(`/v1/${NS}/`, '/v1/Shop/'),
    body,
    status: 400,
    code: INVALID,
    field: 'ns',
  },
]);

/** The seeded in-flight key and queue message, which every rejected request must leave as they are. */
const KEY = 'order:seeded';
const CLAIM = `/v1/${NS}/idempotency/${KEY}/claim`;
const KEY_PATH = `/v1/${NS}/idempotency/${KEY}`;
const QUEUE = 'orders';
const ATTEMPTS = `/v1/${NS}/queues/${QUEUE}/attempts`;
const ACKS = `/v1/${NS}/queues/${QUEUE}/acks`;
const DEAD_LETTERS = `/admin/v1/${NS}/queues/${QUEUE}/dead-letters`;
const MESSAGE = 'msg-seeded';
const STORED = { status: 201, headers: { 'content-type': 'application/json' }, body: '{}', bodyEncoding: 'utf8' };
const put = (path: string, body: unknown): Omit<BadCase, 'name' | 'field'> & { path: string } => ({
  method: 'put',
  path,
  body,
  status: 400,
  code: INVALID,
});

const claimCases = invalidBodies(CLAIM, [
  ['empty object (fingerprint missing)', {}, 'fingerprint'],
  ['fingerprint a number', { fingerprint: 1 }, 'fingerprint'],
  ['fingerprint empty', { fingerprint: '' }, 'fingerprint'],
  ['fingerprint with a space', { fingerprint: 'sha256 a' }, 'fingerprint'],
  ['fingerprint of 257 chars', { fingerprint: 'f'.repeat(257) }, 'fingerprint'],
  ['leaseMs 99', { fingerprint: 'f', leaseMs: 99 }, 'leaseMs'],
  ['leaseMs over an hour', { fingerprint: 'f', leaseMs: 3_600_001 }, 'leaseMs'],
  ['leaseMs 1.5', { fingerprint: 'f', leaseMs: 1.5 }, 'leaseMs'],
  ['leaseMs "1000"', { fingerprint: 'f', leaseMs: '1000' }, 'leaseMs'],
  ['retentionSeconds 0', { fingerprint: 'f', retentionSeconds: 0 }, 'retentionSeconds'],
  ['retentionSeconds over 7 days', { fingerprint: 'f', retentionSeconds: 604_801 }, 'retentionSeconds'],
  ['retentionSeconds "60"', { fingerprint: 'f', retentionSeconds: '60' }, 'retentionSeconds'],
  ['unknown property', { fingerprint: 'f', ttl: 5 }, 'ttl'],
]);

const response = (fields: Record<string, unknown>) => ({ token: 'seeded-token', response: { ...STORED, ...fields } });
const completeCases: BadCase[] = (
  [
    ['empty object (token missing)', {}, 'token'],
    ['token with a space', { ...response({}), token: 'bad token' }, 'token'],
    ['token of 129 chars', { ...response({}), token: 't'.repeat(129) }, 'token'],
    ['response missing', { token: 'seeded-token' }, 'response'],
    ['response a string', { token: 'seeded-token', response: 'ok' }, 'response'],
    ['status 99', response({ status: 99 }), 'response.status'],
    ['status 600', response({ status: 600 }), 'response.status'],
    ['status "200"', response({ status: '200' }), 'response.status'],
    ['headers missing', response({ headers: undefined }), 'response.headers'],
    ['headers an array', response({ headers: ['x'] }), 'response.headers'],
    ['header name with a space', response({ headers: { 'bad name': 'x' } }), 'response.headers.bad name'],
    ['header value with CRLF', response({ headers: { 'x-a': 'a\r\nset-cookie: x' } }), 'response.headers.x-a'],
    ['header value a number', response({ headers: { 'x-a': 1 } }), 'response.headers.x-a'],
    ['header value an empty list', response({ headers: { 'x-a': [] } }), 'response.headers.x-a'],
    [
      '101 headers',
      response({ headers: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`x-${i}`, 'v'])) }),
      'response.headers',
    ],
    ['body missing', response({ body: undefined }), 'response.body'],
    ['body a number', response({ body: 5 }), 'response.body'],
    ['bodyEncoding "hex"', response({ bodyEncoding: 'hex' }), 'response.bodyEncoding'],
    ['base64 body not canonical', response({ body: 'abc', bodyEncoding: 'base64' }), 'response.body'],
    ['unknown property in response', response({ trailers: {} }), 'response.trailers'],
  ] as const
).map(([name, body, field]) => ({ name, ...put(KEY_PATH, body), field }));
completeCases.push({
  name: 'response over 256 KiB',
  ...put(KEY_PATH, response({ body: 'x'.repeat(256 * 1024 + 1) })),
  status: 413,
  code: 'payload_too_large',
  field: 'response',
});

const releaseCases: BadCase[] = [
  ['token missing', KEY_PATH, 'token'],
  ['token with a space', `${KEY_PATH}?token=a%20b`, 'token'],
  ['unknown query parameter', `${KEY_PATH}?token=abc&force=1`, 'force'],
].map(([name, path, field]) => ({ name, method: 'delete', path, status: 400, code: INVALID, field }));

const keyPathCases: BadCase[] = [
  ['key with an encoded "/"', 'order%2F1'],
  ['key with %20', 'order%201'],
  ['key with "{"', 'order%7B1'],
  ['key of 256 chars', 'k'.repeat(256)],
  ['key with non-ASCII', 'ord%C3%A9'],
].flatMap(([what, key]): BadCase[] => [
  {
    name: `claim: ${what}`,
    path: `/v1/${NS}/idempotency/${key}/claim`,
    body: { fingerprint: 'f' },
    status: 400,
    code: INVALID,
    field: 'key',
  },
  {
    name: `read: ${what}`,
    method: 'get',
    path: `/v1/${NS}/idempotency/${key}`,
    status: 400,
    code: INVALID,
    field: 'key',
  },
]);

const attemptCases = invalidBodies(ATTEMPTS, [
  ['empty object (messageId missing)', {}, 'messageId'],
  ['messageId empty', { messageId: '' }, 'messageId'],
  ['messageId with a space', { messageId: 'a b' }, 'messageId'],
  ['messageId of 256 chars', { messageId: 'm'.repeat(256) }, 'messageId'],
  ['messageId a number', { messageId: 5 }, 'messageId'],
  ['error a number', { messageId: MESSAGE, error: 5 }, 'error'],
  ['error of 4097 chars', { messageId: MESSAGE, error: 'e'.repeat(4097) }, 'error'],
  ['attempt 0', { messageId: MESSAGE, attempt: 0 }, 'attempt'],
  ['attempt 1.5', { messageId: MESSAGE, attempt: 1.5 }, 'attempt'],
  ['attempt "2" (string)', { messageId: MESSAGE, attempt: '2' }, 'attempt'],
  ['unknown property', { messageId: MESSAGE, attempts: 3 }, 'attempts'],
]);
attemptCases.push({
  name: 'payload over 64 KiB',
  path: ATTEMPTS,
  body: { messageId: MESSAGE, payload: 'p'.repeat(64 * 1024) },
  status: 413,
  code: 'payload_too_large',
  field: 'payload',
});
const ackCases = invalidBodies(ACKS, [
  ['messageId missing', {}, 'messageId'],
  ['messageId with "/"', { messageId: 'a/b' }, 'messageId'],
  ['unknown property', { messageId: MESSAGE, all: true }, 'all'],
]);
const queuePathCases: BadCase[] = [
  {
    name: 'attempts: uppercase queue',
    path: `/v1/${NS}/queues/Orders/attempts`,
    body: { messageId: MESSAGE },
    status: 400,
    code: INVALID,
    field: 'queue',
  },
  {
    name: 'acks: queue of 129 chars',
    path: `/v1/${NS}/queues/${'q'.repeat(129)}/acks`,
    body: { messageId: MESSAGE },
    status: 400,
    code: INVALID,
    field: 'queue',
  },
  {
    name: 'attempts: uppercase namespace',
    path: `/v1/SHOP/queues/${QUEUE}/attempts`,
    body: { messageId: MESSAGE },
    auth: ADMIN,
    status: 400,
    code: INVALID,
    field: 'ns',
  },
];
const deadLetterCases: BadCase[] = (
  [
    ['limit 0', `${DEAD_LETTERS}?limit=0`, 'limit'],
    ['limit 1001', `${DEAD_LETTERS}?limit=1001`, 'limit'],
    ['limit "abc"', `${DEAD_LETTERS}?limit=abc`, 'limit'],
    ['limit 1.5', `${DEAD_LETTERS}?limit=1.5`, 'limit'],
    ['cursor "abc"', `${DEAD_LETTERS}?cursor=abc`, 'cursor'],
    ['unknown query parameter', `${DEAD_LETTERS}?order=desc`, 'order'],
    ['uppercase queue', `/admin/v1/${NS}/queues/Orders/dead-letters`, 'queue'],
  ] as const
).map(([name, path, field]): BadCase => ({
  name,
  method: 'get',
  path,
  auth: ADMIN,
  status: 400,
  code: INVALID,
  field,
}));
deadLetterCases.push(
  {
    name: 'redrive: id with %20',
    path: `${DEAD_LETTERS}/a%20b/redrive`,
    auth: ADMIN,
    status: 400,
    code: INVALID,
    field: 'id',
  },
  {
    name: 'purge: id of 256 chars',
    method: 'delete',
    path: `${DEAD_LETTERS}/${'i'.repeat(256)}`,
    auth: ADMIN,
    status: 400,
    code: INVALID,
    field: 'id',
  },
  { name: 'list with a client token', method: 'get', path: DEAD_LETTERS, status: 403, code: 'forbidden' },
  { name: 'redrive with a client token', path: `${DEAD_LETTERS}/${MESSAGE}/redrive`, status: 403, code: 'forbidden' },
  {
    name: 'purge without a token',
    method: 'delete',
    path: `${DEAD_LETTERS}/${MESSAGE}`,
    auth: null,
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'claim without a token',
    path: CLAIM,
    body: { fingerprint: 'f' },
    auth: null,
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'claim on namespace "other"',
    path: `/v1/other/idempotency/${KEY}/claim`,
    body: { fingerprint: 'f' },
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'attempt on namespace "other"',
    path: `/v1/other/queues/${QUEUE}/attempts`,
    body: { messageId: MESSAGE },
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'claim: malformed JSON',
    path: CLAIM,
    body: new Raw('{"fingerprint":'),
    status: 400,
    code: INVALID,
    field: 'body',
  },
  {
    name: 'complete: text/plain',
    method: 'put',
    path: KEY_PATH,
    body: new Raw('token=x', 'text/plain'),
    status: 415,
    code: INVALID,
    field: 'content-type',
  },
  {
    name: 'attempts: JSON array',
    path: ATTEMPTS,
    body: [{ messageId: MESSAGE }],
    status: 400,
    code: INVALID,
    field: 'body',
  },
);

describe('bad input (Redis store, tokens on)', () => {
  const keyPrefix = uniquePrefix('bad-input');
  const policyDir = mkdtempSync(join(tmpdir(), 'sluice-bad-input-'));
  let coordinator: TestCoordinator;
  let redis: Redis;
  let before: { retries: number; requests: number; limit: number; windowSeconds: number };
  let seededToken: string;
  let keyBefore: unknown;

  const server = () => coordinator.server;
  const readBudget = async (dep = DEP): Promise<typeof before> => {
    const res = await request(server()).get(`/v1/${NS}/deps/${dep}`).set('authorization', ADMIN).expect(200);
    return res.body.budget;
  };

  beforeAll(async () => {
    // Long windows, so nothing slides out of the budget while the table runs.
    const windows = { retryBudget: { windowSeconds: 600 }, breaker: { windowSeconds: 600 } };
    const policiesFile = join(policyDir, 'policies.json');
    writeFileSync(policiesFile, JSON.stringify({ namespaces: { [NS]: { default: windows } } }));
    redis = new Redis(SHARED_REDIS_URL);
    coordinator = await testCoordinator({
      config: { tokens: [ADMIN_TOKEN, SHOP_TOKEN], redisUrl: SHARED_REDIS_URL, keyPrefix, policiesFile },
    });

    // As an admin: deposit 40 requests on the target, then take two retries.
    const seed = { reporter: 'seed', deps: [{ dep: DEP, requests: 40, successes: 38, failures: 2, slow: 1 }] };
    await request(server()).post(REPORTS).set('authorization', ADMIN).send(seed).expect(200);
    for (let i = 0; i < 2; i++) {
      const res = await request(server()).post(RETRY).set('authorization', ADMIN).send(retry({})).expect(200);
      expect(res.body).toMatchObject({ allow: true, reason: 'granted' });
    }
    before = await readBudget();

    // An in-flight idempotency key and a message with one failed attempt, both left alone by the table.
    const claimed = await request(server()).post(CLAIM).set('authorization', SHOP).send({ fingerprint: 'f' });
    expect(claimed.status).toBe(201);
    seededToken = claimed.body.token;
    keyBefore = (await request(server()).get(KEY_PATH).set('authorization', SHOP).expect(200)).body;
    const first = await request(server()).post(ATTEMPTS).set('authorization', SHOP).send({ messageId: MESSAGE });
    expect(first.body).toMatchObject({ attempt: 1, deadLetter: false });
    expect(before).toMatchObject({ retries: 2, requests: 40, windowSeconds: 600 });
  });

  afterAll(async () => {
    await coordinator?.close();
    if (redis) {
      await deleteKeysWithPrefix(redis, `${keyPrefix}:`);
      redis.disconnect();
    }
    rmSync(policyDir, { recursive: true, force: true });
  });

  function send(c: BadCase): request.Test {
    const req = request(server())[c.method ?? 'post'](c.path);
    const auth = c.auth === undefined ? SHOP : c.auth;
    if (auth !== null) req.set('authorization', auth);
    if (c.body instanceof Raw) return req.set('content-type', c.body.contentType).send(c.body.text);
    if (c.body !== undefined) return req.send(c.body as object);
    return req;
  }

  function expectError(res: request.Response, c: BadCase): void {
    const got = `got ${res.status} ${JSON.stringify(res.body)}`.slice(0, 600);
    if (res.status !== c.status || res.body?.code !== c.code) {
      throw new Error(`expected ${c.status} ${c.code}${c.field ? ` naming "${c.field}"` : ''}, ${got}`);
    }
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { statusCode, code, message, details, ...extra } = res.body as Record<string, unknown>;
    expect(extra).toEqual({});
    expect(statusCode).toBe(res.status);
    expect(typeof code).toBe('string');
    expect(message).toEqual(expect.stringMatching(/./));
    if (details !== undefined) {
      expect(Array.isArray(details)).toBe(true);
      for (const detail of details as unknown[]) {
        expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
      }
    }
    if (c.field !== undefined) {
      const fields = ((details as Array<{ field: string }> | undefined) ?? []).map((d) => d.field);
      if (!fields.includes(c.field)) throw new Error(`expected a detail naming "${c.field}", ${got}`);
    }
  }

  describe.each([
    ['POST /retry bodies', retryCases],
    ['POST /reports bodies', reportCases],
    ['names in the path', nameCases],
    ['body envelope (syntax, shape, size, content-type)', envelopeCases],
    ['tokens', authCases],
    ['POST idempotency claim bodies', claimCases],
    ['PUT idempotency completion bodies', completeCases],
    ['DELETE idempotency release queries', releaseCases],
    ['idempotency keys in the path', keyPathCases],
    ['POST delivery attempt bodies', attemptCases],
    ['POST delivery ack bodies', ackCases],
    ['queue names in the path', queuePathCases],
    ['admin dead-letter queries, ids and tokens', deadLetterCases],
  ])('%s', (_group, cases) => {
    it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const res = await send(c);
      expect(res.status).toBeLessThan(500);
      expectError(res, c);
    });
  });

  describe('control cases', () => {
    it('the client token reads its own namespace: 200', async () => {
      const res = await request(server()).get(VIEW).set('authorization', SHOP).expect(200);
      expect(res.body).toMatchObject({ namespace: NS, dependency: DEP, budget: { retries: 2, requests: 40 } });
    });

    it('the client token asks about a retry on its own namespace (another dependency): 200', async () => {
      const res = await request(server())
        .post(`/v1/${NS}/deps/control-api/retry`)
        .set('authorization', SHOP)
        .set('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify(retry({ status: 503, deadlineMs: 5000, retryAfterMs: 0 })))
        .expect(200);
      expect(res.body).toMatchObject({ allow: expect.any(Boolean), reason: expect.any(String) });
    });

    /** Valid names up to the documented 128 characters, with dots, dashes and underscores. */
    const validName = (length: number): string => `a.b_c-9${'z'.repeat(length - 7)}`;
    it.each([
      ['dep', 8, `/v1/${NS}/deps/${validName(8)}`],
      ['dep', 100, `/v1/${NS}/deps/${validName(100)}`],
      ['dep', 101, `/v1/${NS}/deps/${validName(101)}`],
      ['dep', 128, `/v1/${NS}/deps/${validName(128)}`],
      ['ns', 128, `/v1/${validName(128)}/deps/${DEP}`],
    ])('a valid %s of %i chars is accepted: 200', async (_what, length, path) => {
      const res = await request(server()).get(path).set('authorization', ADMIN);
      if (res.status !== 200)
        throw new Error(`expected 200 for a ${length}-char name, got ${res.status} ${JSON.stringify(res.body)}`);
    });
  });

  describe('after the table', () => {
    it('the seeded idempotency key is unchanged and its token still completes it', async () => {
      expect((await request(server()).get(KEY_PATH).set('authorization', SHOP).expect(200)).body).toEqual(keyBefore);
      await request(server())
        .put(KEY_PATH)
        .set('authorization', SHOP)
        .send({ token: seededToken, response: STORED })
        .expect(204);
    });

    it('the seeded message has still one failed attempt, and the queue no dead letter', async () => {
      const next = await request(server()).post(ATTEMPTS).set('authorization', SHOP).send({ messageId: MESSAGE });
      expect(next.body).toMatchObject({ attempt: 2, deadLetter: false });
      const page = await request(server()).get(DEAD_LETTERS).set('authorization', ADMIN).expect(200);
      expect(page.body).toEqual({ items: [], next: null });
    });

    it('the target budget is unchanged (retries and requests)', async () => {
      expect(await readBudget()).toEqual(before);
    });

    it('the good entries of rejected reports recorded nothing', async () => {
      expect(await readBudget(BYSTANDER)).toMatchObject({ retries: 0, requests: 0 });
      expect(await readBudget('other-api')).toMatchObject({ retries: 0, requests: 0 });
      const view = await request(server()).get(`/v1/${NS}/deps/${BYSTANDER}`).set('authorization', ADMIN).expect(200);
      expect(view.body.breaker.calls).toBe(0);
    });

    it('a report rejected for one bad entry records nothing; the same report fixed is recorded', async () => {
      const fresh = 'fresh-api';
      const rejected = await request(server())
        .post(REPORTS)
        .set('authorization', SHOP)
        .send({ reporter: 'r1', deps: [good(fresh), { ...good('x-api'), dep: 'X API' }] });
      expectError(rejected, { name: 'one bad entry', path: REPORTS, status: 400, code: INVALID, field: 'deps.1.dep' });
      expect((await readBudget(fresh)).requests).toBe(0);

      await request(server())
        .post(REPORTS)
        .set('authorization', SHOP)
        .send({ reporter: 'r1', deps: [good(fresh)] })
        .expect(200);
      expect((await readBudget(fresh)).requests).toBe(7);
    });
  });
});
