import { startCoordinatorProcess, type CoordinatorProcess } from './coordinator-process';
import { writePoliciesFile } from './policies';
import { findFreePorts } from './ports';

/**
 * A fleet of built coordinator processes on one store, and the state the fault tests put in it
 * and look for afterwards: an automatically opened breaker, an operator's trip, file-seeded
 * policies (a dependency's and a named limit's), a budget window, a completed idempotency key.
 */

export interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A loaded machine boots a coordinator in seconds; two at once, slower. */
const READY_TIMEOUT_MS = 60_000;
/** Client-side cap on one request, so a hanging instance fails the call instead of the test. */
const REQUEST_CAP_MS = 5000;

export async function call(base: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_CAP_MS),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (204, /metrics): keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** What the fleet's policies file says (seeded into the store at boot and after a reset). */
export const FLEET_POLICIES = {
  namespaces: {
    shop: {
      dependencies: { 'payments-api': { mode: 'shadow', retryBudget: { ratio: 0.05 } } },
      limits: { 'checkout-per-user': { rate: 10, periodMs: 60_000, burst: 5 } },
    },
  },
};

export const TRIP = { reason: 'bad deploy', durationSeconds: 600 };
const OPENED_DEP = 'inventory';
const BUDGET_DEP = 'search';
const IDEMPOTENCY_KEY = 'order-1';
const FINGERPRINT = { fingerprint: 'sha256:order-1' };

export interface Fleet {
  coordinators: CoordinatorProcess[];
  urls: string[];
  close(): Promise<void>;
}

/** `count` built coordinators on the store `env` names, with `document` (FLEET_POLICIES) as their policies file. */
export async function startFleetProcesses(
  count: number,
  env: NodeJS.ProcessEnv,
  document: object = FLEET_POLICIES,
): Promise<Fleet> {
  const policies = writePoliciesFile(document);
  const ports = await findFreePorts(count);
  const coordinators: CoordinatorProcess[] = [];
  const close = async () => {
    await Promise.all(coordinators.map((coordinator) => coordinator.stop()));
    policies.cleanup();
  };
  const started = await Promise.allSettled(
    ports.map((port) =>
      startCoordinatorProcess(
        port,
        {
          SLUICE_LOG_LEVEL: 'info',
          SLUICE_POLICIES_FILE: policies.path,
          SLUICE_STORE_TIMEOUT_MS: '100',
          ...env,
        },
        READY_TIMEOUT_MS,
      ),
    ),
  );
  for (const outcome of started) if (outcome.status === 'fulfilled') coordinators.push(outcome.value);
  const failed = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) {
    await close();
    throw failed.reason;
  }
  return { coordinators, urls: coordinators.map((coordinator) => coordinator.url), close };
}

/** The operator's trip as the fleet answered it. */
export interface TripRecord {
  since: number;
  openUntil: number;
  reason: string;
}

/** Puts every kind of state in the store through `base`; resolves the trip's record. */
export async function seedFleetState(base: string): Promise<TripRecord> {
  const report = (dep: string, requests: number, failures: number) =>
    call(base, 'POST', '/v1/shop/reports', {
      reporter: 'pod-1',
      deps: [{ dep, requests, successes: requests - failures, failures, slow: 0 }],
    });
  expectStatus(await report(OPENED_DEP, 20, 15), 200);
  expectStatus(await report(BUDGET_DEP, 1000, 0), 200);
  const trip = await call(base, 'POST', '/admin/v1/shop/breakers/payments-api/trip', TRIP);
  expectStatus(trip, 200);
  const claim = await call(base, 'POST', `/v1/shop/idempotency/${IDEMPOTENCY_KEY}/claim`, FINGERPRINT);
  expectStatus(claim, 201);
  const response = {
    status: 201,
    headers: { 'content-type': 'application/json' },
    body: '{"id":1}',
    bodyEncoding: 'utf8',
  };
  expectStatus(
    await call(base, 'PUT', `/v1/shop/idempotency/${IDEMPOTENCY_KEY}`, { token: claim.body.token, response }),
    204,
  );
  return { since: trip.body.since, openUntil: trip.body.openUntil, reason: trip.body.reason };
}

export type StateKind = 'breakers' | 'forced states' | 'policies' | 'budgets' | 'idempotency records';

/**
 * What of seedFleetState's state `base` no longer finds. Looking at the idempotency key claims it
 * again when it was lost (the claim is released at once).
 */
export async function lostState(base: string, trip: TripRecord): Promise<StateKind[]> {
  const lost: StateKind[] = [];
  const dep = async (name: string) => (await call(base, 'GET', `/v1/shop/deps/${name}`)).body;
  if ((await dep(OPENED_DEP)).breaker?.state !== 'open') lost.push('breakers');
  const payments = await dep('payments-api');
  if (!sameTrip(payments.breaker, trip)) lost.push('forced states');
  const take = await call(base, 'POST', '/v1/shop/limits/checkout-per-user/take', { key: 'user-1' });
  if (payments.policy?.mode !== 'shadow' || payments.policy?.retryBudget?.ratio !== 0.05 || take.status !== 200) {
    lost.push('policies');
  }
  if (((await dep(BUDGET_DEP)).budget?.requests ?? 0) < 1000) lost.push('budgets');
  const claim = await call(base, 'POST', `/v1/shop/idempotency/${IDEMPOTENCY_KEY}/claim`, FINGERPRINT);
  if (claim.status !== 200) {
    lost.push('idempotency records');
    if (claim.status === 201)
      await call(base, 'DELETE', `/v1/shop/idempotency/${IDEMPOTENCY_KEY}?token=${claim.body.token}`);
  }
  return lost;
}

/** True when `breaker` is the operator's trip: forced_open, same reason, same expiry. */
export function sameTrip(
  breaker: { state?: string; openUntil?: number; reason?: string } | undefined,
  trip: TripRecord,
) {
  return breaker?.state === 'forced_open' && breaker.openUntil === trip.openUntil && breaker.reason === trip.reason;
}

/** The value of one unlabelled series of an instance's /metrics (0 when absent). */
export async function metricValue(base: string, name: string): Promise<number> {
  const text = (await call(base, 'GET', '/metrics')).body as string;
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

function expectStatus(answer: Answer, status: number): void {
  if (answer.status !== status)
    throw new Error(`expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
}
