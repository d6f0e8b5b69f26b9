import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './config-error';
import { loadConfig } from './config';

const TOKENS = JSON.stringify([
  { id: 'ops', secret: 'admin-secret-0123456789', role: 'admin', namespaces: ['*'] },
  { id: 'checkout', secret: 'shop-client-secret-0123', role: 'client', namespaces: ['shop'] },
]);

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('defaults to the embedded store on loopback with a 50 ms store timeout', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '127.0.0.1',
      redisUrl: undefined,
      redisClusterNodes: undefined,
      tokens: [],
      tokensFile: undefined,
      policiesFile: undefined,
      storeTimeoutMs: 50,
      logLevel: 'info',
      logFormat: 'json',
      maxDependenciesPerNamespace: 1000,
      keyPrefix: 'sluice',
      sseHeartbeatMs: 15000,
      maxNamespaces: 1000,
      maxEventLoopDelayMs: 1000,
      maxInFlight: 5000,
      durability: 'auto',
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      SLUICE_PORT: '9090',
      SLUICE_REDIS_URL: 'redis://cache:6379/0',
      SLUICE_REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001',
      SLUICE_TOKENS: TOKENS,
      SLUICE_STORE_TIMEOUT_MS: '75',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_LOG_FORMAT: 'pretty',
      SLUICE_MAX_DEPENDENCIES_PER_NAMESPACE: '50',
      SLUICE_KEY_PREFIX: 'prod',
      SLUICE_MAX_NAMESPACES: '20',
      SLUICE_MAX_EVENT_LOOP_DELAY_MS: '0',
      SLUICE_MAX_IN_FLIGHT: '300',
      SLUICE_DURABILITY: 'replica',
    });
    expect(config).toMatchObject({
      port: 9090,
      host: '0.0.0.0',
      redisUrl: 'redis://cache:6379/0',
      redisClusterNodes: ['10.0.0.1:7000', '10.0.0.2:7001'],
      storeTimeoutMs: 75,
      logLevel: 'warn',
      logFormat: 'pretty',
      maxDependenciesPerNamespace: 50,
      keyPrefix: 'prod',
      maxNamespaces: 20,
      maxEventLoopDelayMs: 0,
      maxInFlight: 300,
      durability: 'replica',
    });
    expect(config.tokens.map((token) => [token.id, token.role])).toEqual([
      ['ops', 'admin'],
      ['checkout', 'client'],
    ]);
  });

  it.each([
    [{ SLUICE_PORT: 'eighty' }, 'SLUICE_PORT'],
    [{ SLUICE_PORT: '70000' }, 'SLUICE_PORT'],
    [{ SLUICE_PORT: '80.5' }, 'SLUICE_PORT'],
    [{ SLUICE_MAX_IN_FLIGHT: '-1' }, 'SLUICE_MAX_IN_FLIGHT'],
    [{ SLUICE_DURABILITY: 'always' }, 'SLUICE_DURABILITY'],
    [{ SLUICE_MAX_EVENT_LOOP_DELAY_MS: 'soon' }, 'SLUICE_MAX_EVENT_LOOP_DELAY_MS'],
    [{ SLUICE_MAX_NAMESPACES: '1.5' }, 'SLUICE_MAX_NAMESPACES'],
    [{ SLUICE_REDIS_URL: 'http://cache' }, 'SLUICE_REDIS_URL'],
    [{ SLUICE_REDIS_CLUSTER_NODES: 'cache' }, 'SLUICE_REDIS_CLUSTER_NODES'],
    [{ SLUICE_REDIS_CLUSTER_NODES: 'cache:99999' }, 'SLUICE_REDIS_CLUSTER_NODES'],
    [{ SLUICE_STORE_TIMEOUT_MS: '0' }, 'SLUICE_STORE_TIMEOUT_MS'],
    [{ SLUICE_LOG_LEVEL: 'loud' }, 'SLUICE_LOG_LEVEL'],
    [{ SLUICE_LOG_FORMAT: 'colourful' }, 'SLUICE_LOG_FORMAT'],
    [{ SLUICE_TOKENS: '{not json' }, 'SLUICE_TOKENS'],
    [{ SLUICE_TOKENS: '{"id":"x"}' }, 'SLUICE_TOKENS'],
    [{ SLUICE_TOKENS: '[{"id":"x","secret":"short","role":"admin","namespaces":["*"]}]' }, 'SLUICE_TOKENS'],
    [
      { SLUICE_TOKENS: '[{"id":"x","secret":"long-enough-secret-1","role":"root","namespaces":["*"]}]' },
      'SLUICE_TOKENS',
    ],
    [
      { SLUICE_TOKENS: '[{"id":"x","secret":"long-enough-secret-1","role":"client","namespaces":["Bad"]}]' },
      'SLUICE_TOKENS',
    ],
    [{ SLUICE_TOKENS_FILE: '/nonexistent/tokens.json' }, 'SLUICE_TOKENS_FILE'],
    [{ SLUICE_TOKENS: TOKENS, SLUICE_TOKENS_FILE: '/x' }, 'SLUICE_TOKENS_FILE'],
    [{ SLUICE_KEY_PREFIX: 'has space' }, 'SLUICE_KEY_PREFIX'],
  ])('rejects %j naming %s', (env, variable) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`${variable}: `)).toBe(true);
  });

  it('rejects duplicate token ids', () => {
    const duplicated = JSON.stringify([
      { id: 'ops', secret: 'admin-secret-0123456789', role: 'admin', namespaces: ['*'] },
      { id: 'ops', secret: 'other-secret-0123456789', role: 'client', namespaces: ['shop'] },
    ]);
    expect(configError({ SLUICE_TOKENS: duplicated }).message).toContain('appears twice');
  });

  it('reads tokens from a file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sluice-tokens-')), 'tokens.json');
    writeFileSync(path, TOKENS);
    expect(loadConfig({ SLUICE_TOKENS_FILE: path }).tokens).toHaveLength(2);
  });
});
