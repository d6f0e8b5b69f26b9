import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { ConfigError } from '../config/config-error';
import { join } from 'node:path';
import { parsePolicies, readPoliciesFile } from './policies-file';
import { PolicyService } from './policy.service';

describe('policies file', () => {
  it('overlays the file default, the namespace default and the dependency policy, in that order', async () => {
    const file = parsePolicies(
      {
        default: { retryBudget: { ratio: 0.2 }, backoff: { jitter: 'decorrelated' } },
        namespaces: {
          shop: {
            default: { retryBudget: { ratio: 0.3, windowSeconds: 20 } },
            dependencies: { 'payments-api': { retryBudget: { maxAttempts: 2 }, mode: 'shadow' } },
          },
        },
      },
      'test',
    );
    const policies = new PolicyService(file);
    expect(await policies.forDependency('shop', 'payments-api')).toEqual({
      ...DEFAULT_DEPENDENCY_POLICY,
      mode: 'shadow',
      retryBudget: { ratio: 0.3, minRetriesPerSecond: 10, windowSeconds: 20, maxAttempts: 2 },
      backoff: { baseMs: 50, capMs: 2000, jitter: 'decorrelated' },
    });
    expect((await policies.forDependency('shop', 'search')).retryBudget.maxAttempts).toBe(3);
    expect((await policies.forDependency('other', 'search')).retryBudget.ratio).toBe(0.2);
  });

  it.each([
    [
      { namespaces: { shop: { dependencies: { pay: { retryBudget: { ratio: 2 } } } } } },
      'namespaces.shop.dependencies.pay.retryBudget.ratio',
    ],
    [{ default: { backoff: { jitter: 'wild' } } }, 'default.backoff.jitter'],
    [{ default: { backoff: { baseMs: 500, capMs: 100 } } }, 'default.backoff.capMs'],
    [{ default: { retryBudget: { windowSeconds: 0 } } }, 'default.retryBudget.windowSeconds'],
    [{ default: { surprise: true } }, 'default.surprise'],
    [{ namespaces: { Shop: {} } }, 'namespaces.Shop'],
    [{ namespaces: { shop: { dependencies: { 'bad name': {} } } } }, 'namespaces.shop.dependencies.bad name'],
    [{ extra: {} }, 'extra'],
    [{ default: { rateLimit: { rate: 0, periodMs: 1000, burst: 1 } } }, 'default.rateLimit.rate'],
  ])('rejects %j naming %s', (document, field) => {
    expect(() => parsePolicies(document, 'policies.yaml')).toThrow(ConfigError);
    expect(() => parsePolicies(document, 'policies.yaml')).toThrow(field);
  });

  it('reads the example policies file shipped in deploy/', async () => {
    const file = readPoliciesFile(join(__dirname, '../../../../deploy/policies.example.yaml'));
    const policies = new PolicyService(file);
    expect((await policies.forDependency('shop', 'payments-api')).retryBudget).toEqual({
      ratio: 0.05,
      minRetriesPerSecond: 10,
      windowSeconds: 10,
      maxAttempts: 2,
    });
    expect((await policies.forDependency('shop', 'search')).mode).toBe('shadow');
  });
});
