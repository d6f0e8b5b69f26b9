import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createCoordinator } from '../../apps/coordinator/src/bootstrap';
import type { SluiceConfig } from '../../apps/coordinator/src/config/config';
import type { TokenDefinition } from '../../apps/coordinator/src/config/tokens';

export const ADMIN_TOKEN: TokenDefinition = {
  id: 'ops',
  secret: 'admin-secret-0123456789',
  role: 'admin',
  namespaces: ['*'],
};
export const SHOP_TOKEN: TokenDefinition = {
  id: 'checkout',
  secret: 'shop-client-secret-0123',
  role: 'client',
  namespaces: ['shop'],
};

/** A configuration for tests: embedded store, quiet logs, no tokens, unless overridden. */
export function testConfig(overrides: Partial<SluiceConfig> = {}): SluiceConfig {
  return {
    port: 0,
    host: '127.0.0.1',
    tokens: [],
    storeTimeoutMs: 200,
    logLevel: 'silent',
    maxDependenciesPerNamespace: 1000,
    keyPrefix: 'sluice',
    sseHeartbeatMs: 15_000,
    maxNamespaces: 1000,
    // In-process apps share the test runner's event loop: its delay says nothing of theirs.
    maxEventLoopDelayMs: 0,
    maxInFlight: 5000,
    ...overrides,
  };
}

export interface RunningCoordinator {
  app: NestFastifyApplication;
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  close(): Promise<void>;
}

/** Starts a real coordinator listening on a free loopback port. */
export async function startCoordinator(overrides: Partial<SluiceConfig> = {}): Promise<RunningCoordinator> {
  const app = await createCoordinator(testConfig(overrides));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

/** Builds a coordinator for supertest (not listening). */
export async function createTestCoordinator(overrides: Partial<SluiceConfig> = {}): Promise<NestFastifyApplication> {
  const app = await createCoordinator(testConfig(overrides));
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

/** Writes a policies file (SLUICE_POLICIES_FILE) to a fresh temporary folder and returns its path. */
export function writePoliciesFile(document: object): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sluice-policies-')), 'policies.json');
  writeFileSync(path, JSON.stringify(document));
  return path;
}

/** Starts `count` coordinators sharing one configuration (one store): a fleet of instances. */
export function startFleet(overrides: Partial<SluiceConfig>, count = 2): Promise<RunningCoordinator[]> {
  return Promise.all(Array.from({ length: count }, () => startCoordinator(overrides)));
}

export const bearer = (token: TokenDefinition): { authorization: string } => ({
  authorization: `Bearer ${token.secret}`,
});
