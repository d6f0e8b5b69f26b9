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
    logFormat: 'json',
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

export const bearer = (token: TokenDefinition): { authorization: string } => ({
  authorization: `Bearer ${token.secret}`,
});
