// The least a retry decision can cost over HTTP: a bare node:http server that parses the
// request body and makes the same store call as the coordinator (RedisStore.decideRetry: the same
// decide_retry script, keys and arguments). Env: BENCH_PORT, BENCH_REDIS_URL, BENCH_KEY_PREFIX,
// BENCH_BUDGET (JSON).
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const require = createRequire(import.meta.url);
const { RedisStore, SluiceKeys } = require('../../dist/libs/store/src/index.js');

const port = Number(process.env.BENCH_PORT);
const prefix = process.env.BENCH_KEY_PREFIX;
const budget = JSON.parse(process.env.BENCH_BUDGET);
const ROUTE = /^\/v1\/([a-z0-9][a-z0-9._-]*)\/deps\/([a-z0-9][a-z0-9._-]*)\/retry$/;
const BACKOFF = { baseMs: 50, capMs: 2000 };

const redis = new Redis(process.env.BENCH_REDIS_URL, { protocol: 2 });
const store = new RedisStore({ client: redis, keys: new SluiceKeys(prefix), timeoutMs: 1000 });

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

async function decide(namespace, dependency, body) {
  const delayMs = Math.floor(Math.random() * Math.min(BACKOFF.capMs, BACKOFF.baseMs * 2 ** (body.attempt - 1)));
  const outcome = await store.decideRetry({ namespace, dependency }, { budget, delayMs, deadlineMs: body.deadlineMs });
  return {
    allow: outcome.verdict === 'granted',
    reason: outcome.verdict,
    delayMs,
    budget: outcome.budget,
    breaker: { state: outcome.breaker.record.state },
    shadow: false,
  };
}

const server = createServer(async (req, res) => {
  try {
    if (req.method === 'GET' && req.url === '/health/ready') {
      await redis.ping();
      return send(res, 200, { status: 'ok' });
    }
    const route = req.method === 'POST' ? ROUTE.exec(req.url) : null;
    if (!route) return send(res, 404, { error: 'not_found' });
    let body;
    try {
      body = await readJson(req);
    } catch {
      return send(res, 400, { error: 'invalid_json' });
    }
    if (!Number.isInteger(body?.attempt) || body.attempt < 1 || body.attempt > 100) {
      return send(res, 400, { error: 'invalid_attempt' });
    }
    send(res, 200, await decide(route[1], route[2], body));
  } catch (error) {
    if (!res.headersSent) send(res, 503, { error: 'store_unavailable', message: error.message });
  }
});

server.listen(port, '127.0.0.1');

const stop = () => {
  server.close();
  redis.disconnect();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
