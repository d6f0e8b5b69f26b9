import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isGiveUpError, type GiveUpError } from '@sluice/client';
import type { SluiceConfig } from '../../apps/coordinator/src/config/config';
import { testCoordinator, type TestCoordinator } from './test-coordinator';

/** Writes a policies file for the `shop` namespace: `dependencies` maps names to policy overrides. */
export function policiesFile(dependencies: Record<string, unknown>, defaults: unknown = {}): string {
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-sdk-')), 'policies.json');
  writeFileSync(file, JSON.stringify({ namespaces: { shop: { default: defaults, dependencies } } }));
  return file;
}

/** A real coordinator (embedded store unless told otherwise) with the given `shop` policies; `close()` removes them. */
export function startShopCoordinator(
  dependencies: Record<string, unknown> = {},
  overrides: Partial<SluiceConfig> = {},
): Promise<TestCoordinator> {
  return testCoordinator({
    listen: true,
    policies: { namespaces: { shop: { default: {}, dependencies } } },
    config: { sseHeartbeatMs: 1000, ...overrides },
  });
}

/** One Prometheus counter's value from a coordinator's /metrics (0 when absent). */
export async function metric(baseUrl: string, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text
    .split('\n')
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && wanted.every((label) => l.includes(label)));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** The coordinator's count of retry decisions for `shop/<dep>` with `result`. */
export const retryDecisions = (baseUrl: string, dependency: string, result: string): Promise<number> =>
  metric(baseUrl, 'sluice_retry_decisions_total', { namespace: 'shop', dependency, result });

/** Quick backoff, so tests wait milliseconds, not seconds. */
export const QUICK_BACKOFF = { backoff: { baseMs: 1, capMs: 5, jitter: 'full' } };

/** An operator's breaker action on `shop/<dep>` through the admin API; resolves with the status. */
export async function breakerAction(baseUrl: string, dependency: string, action: 'trip' | 'reset', reason: string) {
  const response = await fetch(`${baseUrl}/admin/v1/shop/breakers/${dependency}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reason }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** The GiveUpError a call ends with; fails the test if it ends any other way. */
export async function failure(promise: Promise<unknown>): Promise<GiveUpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isGiveUpError(error)) throw new Error(`expected a GiveUpError, got ${String(error)}`);
  return error;
}
