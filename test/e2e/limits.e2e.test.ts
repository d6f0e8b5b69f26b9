import { performance } from 'node:perf_hooks';
import { LATENCY_BOUNDS_MS } from '@sluice/core';
import type { Store } from '@sluice/store';
import { STORE } from '../../apps/coordinator/src/store/store.provider';
import { testCoordinator, type TestCoordinator, type TestInstance } from '../support/test-coordinator';
import { sleep } from '../support/time';

/*
 * Named rate limits, concurrency bulkheads, fleet latency percentiles and shadow mode, through real
 * coordinators and real HTTP. Fleet-wide parts run on two instances sharing one Redis (one key
 * prefix); the rest on the embedded store.
 */

interface TakeAnswer {
  allow: boolean;
  limit: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
  shadow: boolean;
}

interface AdmitAnswer {
  allow: boolean;
  reason: string;
  retryAfterMs: number;
  breaker: { state: string };
  lease?: { id: string; expiresAt: number };
  shadow: boolean;
}

interface RetryAnswer {
  allow: boolean;
  reason: string;
  delayMs: number;
  shadow: boolean;
}

interface ErrorAnswer {
  statusCode: number;
  code: string;
  message: string;
  details?: Array<{ field: string; message: string }>;
}

interface LatencySummary {
  p50: number | null;
  p95: number | null;
  p99: number | null;
  count: number;
}

const post = (url: string, body?: unknown) =>
  fetch(url, {
    method: 'POST',
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });

/** The fields a 400 names. */
const fieldsOf = (body: ErrorAnswer): string[] => (body.details ?? []).map((detail) => detail.field);

/**
 * The value of one Prometheus sample, matched on its name and exactly these labels (in any order);
 * undefined when the series is absent.
 */
async function metric(instance: TestInstance, name: string, labels: Record<string, string>) {
  const text = await (await fetch(`${instance.url}/metrics`)).text();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      found[pair[1]] = pair[2];
    }
    const wanted = Object.entries(labels);
    if (wanted.length === Object.keys(found).length && wanted.every(([key, value]) => found[key] === value)) {
      return Number(match[3]);
    }
  }
  return undefined;
}

/** Index of the fixed bucket (LATENCY_BOUNDS_MS, plus the overflow) that holds a latency of `ms`. */
function fixedBucketIndex(ms: number): number {
  const index = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return index === -1 ? LATENCY_BOUNDS_MS.length : index;
}

/** The nearest-rank q-quantile of raw samples: the smallest sample with at least q of all at or below it. */
function trueQuantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((x, y) => x - y);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

/** A served percentile is the upper bound of the true value's fixed bucket or of a neighbouring one. */
function expectWithinOneBucket(served: number | null, truth: number): void {
  expect(served).not.toBeNull();
  const servedIndex = LATENCY_BOUNDS_MS.indexOf(served!);
  expect(servedIndex).toBeGreaterThanOrEqual(0); // always one of the fixed bounds
  const trueIndex = Math.min(fixedBucketIndex(truth), LATENCY_BOUNDS_MS.length - 1);
  expect(Math.abs(servedIndex - trueIndex)).toBeLessThanOrEqual(1);
}

/** Counts of `samples` on the reporter's own bounds (one overflow bucket at the end). */
function histogramOf(boundsMs: number[], samples: number[]): { boundsMs: number[]; counts: number[] } {
  const counts = new Array<number>(boundsMs.length + 1).fill(0);
  for (const sample of samples) {
    const index = boundsMs.findIndex((bound) => sample <= bound);
    counts[index === -1 ? boundsMs.length : index] += 1;
  }
  return { boundsMs, counts };
}

const repeat = (value: number, times: number): number[] => new Array<number>(times).fill(value);

describe('limits, bulkheads and percentiles across two instances on one Redis', () => {
  let fleet: TestCoordinator;
  let a: TestInstance;
  let b: TestInstance;
  const instances = () => [a, b];

  beforeAll(async () => {
    fleet = await testCoordinator({
      redis: true,
      label: 'limits-e2e',
      listen: true,
      instances: 2,
      policies: {
        namespaces: {
          shop: {
            limits: { hourly: { rate: 100, periodMs: 3_600_000, burst: 100 } },
            dependencies: {
              bulkhead: { concurrency: { limit: 10, leaseMs: 2000 } },
              killed: { concurrency: { limit: 10, leaseMs: 1000 } },
              timed: { backoff: { baseMs: 100, capMs: 2000, jitter: 'none' } },
            },
          },
        },
      },
    });
    [a, b] = fleet.instances;
  });

  afterAll(() => fleet?.close());

  describe('a named limit of 100 per hour, burst 100', () => {
    const take = (instance: TestInstance, key: string) => post(`${instance.url}/v1/shop/limits/hourly/take`, { key });

    it('grants exactly 100 of 1,000 concurrent takes of one key split across both instances', async () => {
      const answers = await Promise.all(
        Array.from({ length: 1000 }, async (_, i) => {
          const res = await take(instances()[i % 2], 'user-42');
          return { status: res.status, headers: res.headers, body: (await res.json()) as TakeAnswer, via: i % 2 };
        }),
      );
      expect(answers.every((answer) => answer.status === 200)).toBe(true);

      const granted = answers.filter((answer) => answer.body.allow);
      const denied = answers.filter((answer) => !answer.body.allow);
      expect(granted).toHaveLength(100);
      expect(denied).toHaveLength(900);
      // One fleet-wide allowance: both instances granted some of it.
      expect(granted.some((answer) => answer.via === 0)).toBe(true);
      expect(granted.some((answer) => answer.via === 1)).toBe(true);

      // Each grant left one fewer: the 100 grants saw remaining 99, 98, …, 0, each exactly once.
      const remaining = granted.map((answer) => answer.body.remaining).sort((x, y) => y - x);
      expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
      for (const answer of granted) {
        expect(answer.body).toMatchObject({ limit: 100, retryAfterMs: 0, shadow: false });
        expect(answer.headers.get('ratelimit-limit')).toBe('100');
        expect(answer.headers.get('ratelimit-remaining')).toBe(String(answer.body.remaining));
        expect(answer.headers.get('retry-after')).toBeNull();
      }

      for (const answer of denied) {
        expect(answer.body).toMatchObject({ allow: false, limit: 100, remaining: 0, shadow: false });
        expect(answer.body.retryAfterMs).toBeGreaterThan(0);
        expect(answer.headers.get('ratelimit-limit')).toBe('100');
        expect(answer.headers.get('ratelimit-remaining')).toBe('0');
        const retryAfter = answer.headers.get('retry-after');
        expect(retryAfter).toMatch(/^\d+$/); // whole seconds
        expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
        expect(Number(retryAfter)).toBe(Math.ceil(answer.body.retryAfterMs / 1000));
        // The next token of a 100-per-hour limit is about 36 s away.
        expect(answer.body.retryAfterMs).toBeLessThanOrEqual(36_000);
      }
    });

    it('counts remaining down take by take, whichever instance answers', async () => {
      const seen: number[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await take(instances()[i % 2], 'user-7');
        const body = (await res.json()) as TakeAnswer;
        expect(res.status).toBe(200);
        expect(body.allow).toBe(true);
        expect(res.headers.get('ratelimit-remaining')).toBe(String(body.remaining));
        seen.push(body.remaining);
      }
      expect(seen).toEqual([99, 98, 97, 96, 95, 94]);
    });
  });

  describe('a bulkhead of 10 concurrent calls', () => {
    const admit = (instance: TestInstance, dep: string) => post(`${instance.url}/v1/shop/deps/${dep}/admit`, {});
    const release = (instance: TestInstance, dep: string, id: string) =>
      fetch(`${instance.url}/v1/shop/deps/${dep}/leases/${id}`, { method: 'DELETE' });
    const renew = (instance: TestInstance, dep: string, id: string) =>
      post(`${instance.url}/v1/shop/deps/${dep}/leases/${id}/renew`);

    it('never lets 50 workers on two instances hold more than 10 leases, and does fill all 10', async () => {
      const WORKERS = 50;
      const ROUNDS = 3;
      const MAX_ADMITS_PER_LEASE = 400;
      let held = 0;
      let maxHeld = 0;
      let grants = 0;
      let denials = 0;
      const problems: string[] = [];
      const releaseStatuses: number[] = [];

      const worker = async (index: number) => {
        const instance = instances()[index % 2];
        for (let round = 0; round < ROUNDS; round++) {
          let lease: { id: string; expiresAt: number } | undefined;
          for (let attempt = 0; !lease; attempt++) {
            if (attempt >= MAX_ADMITS_PER_LEASE) {
              problems.push(`worker ${index} got no lease in ${MAX_ADMITS_PER_LEASE} admits`);
              return;
            }
            const res = await admit(instance, 'bulkhead');
            const body = (await res.json()) as AdmitAnswer;
            if (res.status !== 200) {
              problems.push(`admit answered ${res.status}: ${JSON.stringify(body)}`);
              return;
            }
            if (body.allow) {
              if (!body.lease) problems.push(`a grant without a lease: ${JSON.stringify(body)}`);
              lease = body.lease ?? { id: 'missing', expiresAt: 0 };
              held += 1;
              grants += 1;
              maxHeld = Math.max(maxHeld, held);
            } else {
              denials += 1;
              if (body.reason !== 'concurrency_limited' || !(body.retryAfterMs > 0)) {
                problems.push(`unexpected refusal: ${JSON.stringify(body)}`);
              }
              // Honour retryAfterMs, bounded: it names the earliest expiry, but releases come sooner.
              await sleep(Math.min(body.retryAfterMs, 20 + Math.random() * 30));
            }
          }
          await sleep(20 + Math.random() * 30); // the call
          held -= 1; // right before the release is sent: the client's count never runs behind the fleet's
          const res = await release(instance, 'bulkhead', lease.id);
          releaseStatuses.push(res.status);
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, (_, index) => worker(index)));

      console.log(
        `bulkhead: ${grants} leases, ${denials} concurrency_limited answers, at most ${maxHeld} held at once`,
      );
      expect(problems).toEqual([]);
      expect(grants).toBe(WORKERS * ROUNDS);
      expect(releaseStatuses).toEqual(new Array<number>(WORKERS * ROUNDS).fill(204));
      expect(maxHeld).toBeLessThanOrEqual(10);
      expect(maxHeld).toBe(10); // the limit was reached, so the check above could have failed
      expect(denials).toBeGreaterThan(0);

      const inUse = await Promise.all(
        instances().map((instance) =>
          metric(instance, 'sluice_concurrency_in_use', { namespace: 'shop', dependency: 'bulkhead' }),
        ),
      );
      for (const value of inUse) {
        expect(value).toBeGreaterThanOrEqual(0);
        expect(value).toBeLessThanOrEqual(10);
      }
    });

    it('releases a lease once (204, then 404) and renews a live one to a later expiry', async () => {
      const first = (await (await admit(a, 'bulkhead')).json()) as AdmitAnswer;
      expect(first).toMatchObject({ allow: true, reason: 'granted', lease: { id: expect.any(String) } });
      expect((await release(a, 'bulkhead', first.lease!.id)).status).toBe(204);
      const again = await release(b, 'bulkhead', first.lease!.id);
      expect(again.status).toBe(404);
      expect(((await again.json()) as ErrorAnswer).code).toBe('not_found');

      const second = (await (await admit(a, 'bulkhead')).json()) as AdmitAnswer;
      expect(second.allow).toBe(true);
      // Redis's clock moves past the grant (leaseMs 2000 before its expiry), so a renewal must reach later.
      await fleet.waitPast(second.lease!.expiresAt - 2000);
      const renewed = await renew(b, 'bulkhead', second.lease!.id);
      expect(renewed.status).toBe(200);
      const { expiresAt } = (await renewed.json()) as { expiresAt: number };
      expect(expiresAt).toBeGreaterThan(second.lease!.expiresAt);
      expect((await release(b, 'bulkhead', second.lease!.id)).status).toBe(204);
      expect((await renew(a, 'bulkhead', second.lease!.id)).status).toBe(404);
    });

    it('frees the slots of holders that never release once leaseMs has passed', async () => {
      // Ten holders take every slot and are "killed": their leases are never released.
      const abandoned: AdmitAnswer[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await admit(instances()[i % 2], 'killed');
        expect(res.status).toBe(200);
        abandoned.push((await res.json()) as AdmitAnswer);
      }
      expect(abandoned.every((answer) => answer.allow && answer.lease)).toBe(true);

      const eleventh = (await (await admit(a, 'killed')).json()) as AdmitAnswer;
      expect(eleventh).toMatchObject({ allow: false, reason: 'concurrency_limited' });
      expect(eleventh.lease).toBeUndefined();
      expect(eleventh.retryAfterMs).toBeGreaterThan(0);
      expect(eleventh.retryAfterMs).toBeLessThanOrEqual(1000);
      expect(await metric(a, 'sluice_concurrency_in_use', { namespace: 'shop', dependency: 'killed' })).toBe(10);
      // Fleet-wide: the other instance refuses too.
      expect((await (await admit(b, 'killed')).json()) as AdmitAnswer).toMatchObject({
        allow: false,
        reason: 'concurrency_limited',
      });

      // The earliest abandoned lease expires (leaseMs 1000), on Redis's clock.
      await fleet.waitPast(Math.min(...abandoned.map((answer) => answer.lease!.expiresAt)));
      const later = await admit(b, 'killed');
      const laterBody = (await later.json()) as AdmitAnswer;
      expect(laterBody).toMatchObject({ allow: true, reason: 'granted', lease: { id: expect.any(String) } });
      const gauge = await metric(b, 'sluice_concurrency_in_use', { namespace: 'shop', dependency: 'killed' });
      expect(gauge).toBeGreaterThanOrEqual(1);
      expect(gauge).toBeLessThanOrEqual(10);

      // An expired lease is gone: neither released nor renewed.
      expect((await release(a, 'killed', abandoned[0].lease!.id)).status).toBe(404);
      expect((await renew(b, 'killed', abandoned[0].lease!.id)).status).toBe(404);
      expect((await release(b, 'killed', laterBody.lease!.id)).status).toBe(204);
    });
  });

  describe('fleet latency percentiles', () => {
    // True samples: 900 at 20 ms, 80 at 200 ms, 20 at 2000 ms, from two reporters on two instances
    // and two sets of bounds (the API's example, and coarser ones that are not the fixed bounds).
    const EXAMPLE_BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
    const COARSE_BOUNDS = [10, 25, 250, 2500, 10000];
    const samplesA = [...repeat(20, 900), ...repeat(200, 40)];
    const samplesB = [...repeat(200, 40), ...repeat(2000, 20)];

    const report = (instance: TestInstance, reporter: string, bounds: number[], samples: number[]) =>
      post(`${instance.url}/v1/shop/reports`, {
        reporter,
        deps: [
          {
            dep: 'timed',
            requests: samples.length,
            successes: samples.length,
            failures: 0,
            slow: 0,
            latency: histogramOf(bounds, samples),
          },
        ],
      });
    const view = async (instance: TestInstance) => {
      const res = await fetch(`${instance.url}/v1/shop/deps/timed`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { latency: LatencySummary }).latency;
    };
    const retry = (instance: TestInstance, deadlineMs: number) =>
      post(`${instance.url}/v1/shop/deps/timed/retry`, { attempt: 1, idempotent: true, status: 503, deadlineMs });

    it('serves p50/p95/p99 within one fixed bucket of the truth, adding up two reporters', async () => {
      expect((await report(a, 'pod-a', EXAMPLE_BOUNDS, samplesA)).status).toBe(200);
      const one = await view(b);
      expect(one.count).toBe(samplesA.length);
      expectWithinOneBucket(one.p50, trueQuantile(samplesA, 0.5));
      expectWithinOneBucket(one.p95, trueQuantile(samplesA, 0.95));
      expectWithinOneBucket(one.p99, trueQuantile(samplesA, 0.99));

      expect((await report(b, 'pod-b', COARSE_BOUNDS, samplesB)).status).toBe(200);
      const all = [...samplesA, ...samplesB];
      for (const instance of instances()) {
        const both = await view(instance);
        console.log(`latency served by ${instance.url}: ${JSON.stringify(both)} (true p50 20, p95 200, p99 2000)`);
        expect(both.count).toBe(1000);
        expectWithinOneBucket(both.p50, trueQuantile(all, 0.5)); // 20
        expectWithinOneBucket(both.p95, trueQuantile(all, 0.95)); // 200
        expectWithinOneBucket(both.p99, trueQuantile(all, 0.99)); // 2000: only pod-b saw those
      }
    });

    it('denies a retry whose delay plus p99 passes the deadline, grants one that fits', async () => {
      const { p99 } = await view(a); // the p99 the decision uses: the same fleet histogram
      expect(p99).not.toBeNull();
      const delayMs = 100; // backoff baseMs 100, jitter none, first retry

      const tooTight = await retry(b, delayMs + p99! - 1);
      expect(tooTight.status).toBe(200);
      expect((await tooTight.json()) as RetryAnswer).toMatchObject({
        allow: false,
        reason: 'deadline_exceeded',
        delayMs,
        shadow: false,
      });
      const roomy = await retry(a, delayMs + p99! + 1);
      expect((await roomy.json()) as RetryAnswer).toMatchObject({ allow: true, reason: 'granted', delayMs });

      // The GET above exported the served p99 on instance a, in seconds.
      const exported = await metric(a, 'sluice_dependency_latency_seconds', {
        namespace: 'shop',
        dependency: 'timed',
        quantile: '0.99',
      });
      expect(exported).toBe(p99! / 1000);
    });
  });
});

describe('limits, admits and shadow mode on the embedded store', () => {
  let app: TestCoordinator;

  beforeAll(async () => {
    app = await testCoordinator({
      listen: true,
      policies: {
        namespaces: {
          shop: {
            limits: { 'per-second': { rate: 100, periodMs: 1000, burst: 20 } },
            dependencies: {
              'shadow-budget': { mode: 'shadow', retryBudget: { ratio: 0, minRetriesPerSecond: 0 } },
              'shadow-breaker': { mode: 'shadow' },
              rated: { rateLimit: { rate: 3, periodMs: 3_600_000, burst: 3 } },
            },
          },
        },
      },
    });
  });

  afterAll(() => app?.close());

  const take = (limit: string, body: unknown) => post(`${app.url}/v1/shop/limits/${limit}/take`, body);
  const admit = (dep: string, body?: unknown) => post(`${app.url}/v1/shop/deps/${dep}/admit`, body);
  const shadowDenials = (dependency: string, kind: string) =>
    metric(app, 'sluice_shadow_denials_total', { namespace: 'shop', dependency, kind }).then((value) => value ?? 0);

  describe('a named limit of 100 per second, burst 20', () => {
    it('grants a client that honours retryAfterMs after every wait, at burst + rate × elapsed', async () => {
      const RATE = 100;
      const BURST = 20; // 200 ms of allowance: rides out most stalls of this shared machine
      const RUN_MS = 2500;
      // Each restart is a stall of this shared machine longer than the burst lasts (it begins the
      // measurement afresh); more than a few means the run measured the machine, not the limit.
      const MAX_RESTARTS = 8;
      // Warm up: a keep-alive connection, the route and the namespace's policies, so the first
      // timed take pays no connect or cold-start time.
      expect((await take('per-second', { key: 'warm-up' })).status).toBe(200);
      // The store's own clock at each decision: the embedded store runs in this process and reads
      // Date.now() as a take starts, so the time between two decisions is known to the millisecond,
      // not bracketed by round trips that a loaded machine stretches.
      const store = app.app.get<Store>(STORE);
      const decidedAt: number[] = [];
      const takeRateLimit = store.takeRateLimit.bind(store);
      const decisionClock = jest.spyOn(store, 'takeRateLimit').mockImplementation((...args) => {
        decidedAt.push(Date.now());
        return takeRateLimit(...args);
      });

      let grants = 0;
      let takes = 0;
      let waits = 0;
      let restarts = 0;
      let longestRoundTripMs = 0;
      let longestOversleepMs = 0;
      const deniedAfterWait: TakeAnswer[] = [];
      const badHeaders: string[] = [];
      const refilledEarly: string[] = [];
      let afterWait = false;
      let previous = { sentAt: 0, resetMs: 0 };
      // When the store decided the first and the last take of the measured run.
      const decided = { first: 0, last: 0 };
      for (;;) {
        const sentAt = performance.now();
        const res = await take('per-second', { key: 'loop-client' });
        const body = (await res.json()) as TakeAnswer;
        const answeredAt = performance.now();
        const decisionAt = decidedAt[decidedAt.length - 1];
        longestRoundTripMs = Math.max(longestRoundTripMs, answeredAt - sentAt);
        const lastTake = previous;
        previous = { sentAt, resetMs: body.resetMs };
        takes += 1;
        if (body.allow) {
          // A grant that leaves burst - 1 found the key's allowance full: the first take, or one after
          // the client sat idle longer than the burst lasts (a stall of this shared 2-core machine;
          // GCRA rightly forgets idle time beyond the burst). GCRA starts afresh there, and so does
          // the measurement.
          // Only a real idle spell counts: at most `answeredAt - lastTake.sentAt` passed between the
          // two decisions, and the previous answer said the allowance would be full after resetMs.
          if (takes === 1 || body.remaining === BURST - 1) {
            if (takes > 1) {
              restarts += 1;
              if (answeredAt - lastTake.sentAt + 1 < lastTake.resetMs) {
                refilledEarly.push(`full after ${answeredAt - lastTake.sentAt} ms, resetMs ${lastTake.resetMs}`);
              }
            }
            if (restarts > MAX_RESTARTS) break;
            grants = 0;
            decided.first = decisionAt;
          }
          grants += 1;
          afterWait = false;
          continue;
        }
        if (afterWait) deniedAfterWait.push(body);
        // The run ends on a denial: it shows the allowance spent, so the grants so far are all the
        // rate allowed up to that moment.
        if (decisionAt - decided.first >= RUN_MS) {
          decided.last = decisionAt;
          break;
        }
        const retryAfter = res.headers.get('retry-after');
        if (retryAfter !== String(Math.max(1, Math.ceil(body.retryAfterMs / 1000))) || !(body.retryAfterMs > 0)) {
          badHeaders.push(`Retry-After ${retryAfter} for retryAfterMs ${body.retryAfterMs}`);
        }
        waits += 1;
        const sleptFrom = performance.now();
        await sleep(body.retryAfterMs); // exactly what the answer says, no margin (and never less)
        longestOversleepMs = Math.max(longestOversleepMs, performance.now() - sleptFrom - body.retryAfterMs);
        afterWait = true;
      }
      decisionClock.mockRestore();
      expect(restarts).toBeLessThanOrEqual(MAX_RESTARTS);
      expect(decidedAt).toHaveLength(takes);

      // Elapsed time on the store's clock, between its decision of the first take and of the last
      // one (the final denial): GCRA grants burst + rate × elapsed of it, give or take one.
      const allowance = (elapsedMs: number) => BURST + (RATE * elapsedMs) / 1000;
      const elapsedMs = decided.last - decided.first;
      console.log(
        `per-second limit: ${grants} grants in the measured run (${takes} takes, ${waits} waits, ${restarts} restarts); ` +
          `elapsed ${(elapsedMs / 1000).toFixed(3)} s on the store's clock, so burst + rate × elapsed = ` +
          `${allowance(elapsedMs).toFixed(2)}; longest round trip ` +
          `${longestRoundTripMs.toFixed(1)} ms, longest oversleep ${longestOversleepMs.toFixed(1)} ms`,
      );

      expect(deniedAfterWait).toEqual([]);
      expect(badHeaders).toEqual([]);
      expect(refilledEarly).toEqual([]);
      expect(waits).toBeGreaterThan(0);
      expect(elapsedMs).toBeGreaterThanOrEqual(RUN_MS);
      expect(Math.abs(grants - allowance(elapsedMs))).toBeLessThanOrEqual(1);
    });

    it('refuses a cost above the burst, an undefined limit and a bad key', async () => {
      const costly = await take('per-second', { key: 'validation-client', cost: 21 });
      expect(costly.status).toBe(400);
      const costlyBody = (await costly.json()) as ErrorAnswer;
      expect(costlyBody.code).toBe('validation_failed');
      expect(fieldsOf(costlyBody)).toContain('cost');

      const undefinedLimit = await take('never-defined', { key: 'validation-client' });
      expect(undefinedLimit.status).toBe(404);
      expect(((await undefinedLimit.json()) as ErrorAnswer).code).toBe('not_found');

      for (const body of [{ key: 'not a key!' }, { key: '' }, {}, { key: 42 }]) {
        const bad = await take('per-second', body);
        expect(bad.status).toBe(400);
        expect(fieldsOf((await bad.json()) as ErrorAnswer)).toContain('key');
      }

      // None of that took anything: the key still has its whole burst.
      const first = (await (await take('per-second', { key: 'validation-client' })).json()) as TakeAnswer;
      expect(first).toMatchObject({ allow: true, remaining: 19 });
    });
  });

  describe('shadow mode', () => {
    it('allows a retry over an empty budget, saying budget_exhausted, and counts it', async () => {
      const before = await shadowDenials('shadow-budget', 'retry');
      const res = await post(`${app.url}/v1/shop/deps/shadow-budget/retry`, { attempt: 1, idempotent: true });
      expect(res.status).toBe(200);
      expect((await res.json()) as RetryAnswer).toMatchObject({
        allow: true,
        reason: 'budget_exhausted',
        shadow: true,
      });
      expect(await shadowDenials('shadow-budget', 'retry')).toBe(before + 1);
    });

    it('admits through a tripped breaker, saying breaker_open', async () => {
      const tripped = await post(`${app.url}/admin/v1/shop/breakers/shadow-breaker/trip`, {
        reason: 'shadow drill',
        durationSeconds: 60,
      });
      expect(tripped.status).toBe(200);
      const before = await shadowDenials('shadow-breaker', 'admit');
      const res = await admit('shadow-breaker', {});
      expect(res.status).toBe(200);
      expect((await res.json()) as AdmitAnswer).toMatchObject({
        allow: true,
        reason: 'breaker_open',
        shadow: true,
        breaker: { state: 'forced_open' },
      });
      expect(await shadowDenials('shadow-breaker', 'admit')).toBe(before + 1);
    });

    it('lets a shadow named limit (set through the admin API) go over its burst, and counts kind="take"', async () => {
      const put = await fetch(`${app.url}/admin/v1/shop/policies/limits/trial`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rate: 1, periodMs: 3_600_000, burst: 2, mode: 'shadow' }),
      });
      expect(put.status).toBe(200);
      const before = await shadowDenials('trial', 'take');
      const answers: TakeAnswer[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await take('trial', { key: 'tenant-1' });
        expect(res.status).toBe(200);
        answers.push((await res.json()) as TakeAnswer);
      }
      expect(answers.map((answer) => answer.allow)).toEqual([true, true, true]);
      expect(answers.every((answer) => answer.shadow)).toBe(true);
      expect(answers[2]).toMatchObject({ limit: 2, remaining: 0 });
      expect(answers[2].retryAfterMs).toBeGreaterThan(0); // what enforcement would have said
      expect(await shadowDenials('trial', 'take')).toBe(before + 1);
    });
  });

  describe('admit request bodies', () => {
    it('accepts no body, {} and a cost; names the field of a bad one', async () => {
      for (const body of [undefined, {}, { cost: 2 }]) {
        const res = await admit('plain', body);
        expect(res.status).toBe(200);
        expect((await res.json()) as AdmitAnswer).toMatchObject({ allow: true, reason: 'granted' });
      }
      for (const [body, field] of [
        [{ cost: 0 }, 'cost'],
        [{ cost: '1' }, 'cost'],
        [{ cost: 1.5 }, 'cost'],
        [{ cots: 1 }, 'cots'],
      ] as const) {
        const res = await admit('plain', body);
        expect(res.status).toBe(400);
        const error = (await res.json()) as ErrorAnswer;
        expect(error.code).toBe('validation_failed');
        expect(fieldsOf(error)).toContain(field);
      }
    });

    it('refuses a cost above the rate limit burst, then grants 3 of 4 admits of a 3-per-hour limit', async () => {
      const costly = await admit('rated', { cost: 4 });
      expect(costly.status).toBe(400);
      expect(fieldsOf((await costly.json()) as ErrorAnswer)).toContain('cost');

      const answers: AdmitAnswer[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await admit('rated', {});
        expect(res.status).toBe(200);
        answers.push((await res.json()) as AdmitAnswer);
      }
      expect(answers.map((answer) => answer.reason)).toEqual(['granted', 'granted', 'granted', 'rate_limited']);
      expect(answers.map((answer) => answer.allow)).toEqual([true, true, true, false]);
      expect(answers[3].retryAfterMs).toBeGreaterThan(0);
      expect(answers[3].retryAfterMs).toBeLessThanOrEqual(1_200_000); // one token of 3 per hour
    });
  });
});
