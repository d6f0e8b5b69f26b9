import http from 'node:http';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { writePoliciesFile } from '../support/policies';
import { findFreePorts } from '../support/ports';
import { RedisServerProcess } from '../support/redis-server';

/** 50 retries/s over a 10 s window and no ratio: every dependency's budget is exactly 500. */
const BUDGET = { ratio: 0, minRetriesPerSecond: 50, windowSeconds: 10 };
const LIMIT = 500;

interface Answer {
  status: number;
  reason?: string;
  code?: string;
}

/** One retry ask over `agent` (a fresh connection unless the agent keeps them alive). */
function ask(url: string, dependency: string, agent: http.Agent): Promise<Answer> {
  const body = JSON.stringify({ attempt: 1, idempotent: true, status: 503 });
  return new Promise((resolve) => {
    const request = http.request(
      `${url}/v1/burst/deps/${dependency}/retry`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const parsed = JSON.parse(text) as { reason?: string; code?: string };
          resolve({ status: response.statusCode ?? 0, reason: parsed.reason, code: parsed.code });
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, code: error.code }));
    request.end(body);
  });
}

const tally = (answers: Answer[]) => {
  const counts: Record<string, number> = {};
  for (const { status, reason, code } of answers) {
    const key = `${status} ${reason ?? code}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

/**
 * The moment the coordinator exists for: every caller asks at once. On a healthy Redis every
 * answer is a decision (no false `store_unavailable`), and the grants add up to the budget
 * exactly, across two instances, with the default store timeout. The Redis is the test's own: on
 * the shared one, another test's work can keep Redis from answering for longer than the store
 * timeout, and a 503 then says so truly.
 */
describe('a burst of simultaneous asks on a healthy Redis', () => {
  const redis = new RedisServerProcess();
  const policies = writePoliciesFile({ default: { retryBudget: BUDGET } });
  let coordinators: CoordinatorProcess[] = [];

  beforeAll(async () => {
    await redis.start();
    const ports = await findFreePorts(2);
    coordinators = await Promise.all(
      ports.map((port) =>
        startCoordinatorProcess(port, { SLUICE_REDIS_URL: redis.url, SLUICE_POLICIES_FILE: policies.path }),
      ),
    );
  });

  afterAll(async () => {
    await Promise.all(coordinators.map((coordinator) => coordinator.stop()));
    policies.cleanup();
    await redis.cleanup();
  });

  const urlOf = (i: number) => coordinators[i % coordinators.length].url;

  it('answers 1,000 asks on fresh connections, split over two instances, with exactly the budget granted', async () => {
    const agent = new http.Agent({ keepAlive: false });
    const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => ask(urlOf(i), 'fresh', agent)));
    expect(tally(answers)).toEqual({ '200 granted': LIMIT, '200 budget_exhausted': 1000 - LIMIT });
  });

  it('answers 300 asks on kept-alive connections, every one granted within the budget', async () => {
    const agents = [0, 1].map(() => new http.Agent({ keepAlive: true, maxSockets: 300 }));
    try {
      // Warm the connections first, so the burst itself travels on open sockets.
      await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          fetchThrough(`${urlOf(i)}/health/live`, agents[i % 2]).catch(() => undefined),
        ),
      );
      const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => ask(urlOf(i), 'warm', agents[i % 2])));
      expect(tally(answers)).toEqual({ '200 granted': 300 });
    } finally {
      agents.forEach((agent) => agent.destroy());
    }
  });

  it('lists the budgets of 1,000 dependencies ten times in a row', async () => {
    const dependencies = Array.from({ length: 1000 }, (_, i) => `dep-${i}`);
    for (let start = 0; start < dependencies.length; start += 100) {
      const deps = dependencies
        .slice(start, start + 100)
        .map((dep) => ({ dep, requests: 10, successes: 10, failures: 0, slow: 0 }));
      const response = await fetch(`${urlOf(start / 100)}/v1/lists/reports`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reporter: 'seeder', deps }),
      });
      expect(response.status).toBe(200);
    }
    const statuses: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i < 10; i++) {
      const response = await fetch(`${urlOf(i)}/admin/v1/lists/budgets`);
      statuses.push(response.status);
      if (response.status === 200) counts.push(((await response.json()) as { items: unknown[] }).items.length);
    }
    expect(statuses).toEqual(Array(10).fill(200));
    expect(counts).toEqual(Array(10).fill(1000));
  });
});

function fetchThrough(url: string, agent: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (response) => {
        response.resume();
        response.on('end', () => resolve());
      })
      .on('error', reject);
  });
}
