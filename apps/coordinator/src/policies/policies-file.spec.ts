import { DEFAULT_DEPENDENCY_POLICY } from '@sluice/protocol';
import { MemoryStore } from '@sluice/store';
import { ConfigError } from '../config/config-error';
import { join } from 'node:path';
import { parsePolicies, readPoliciesFile, type PoliciesFile } from './policies-file';
import { PolicySeeder } from './policy-seeder';
import { PolicyService } from './policy.service';

/** A PolicyService on an embedded store seeded from `file`, as at boot. */
async function seeded(file: PoliciesFile): Promise<PolicyService> {
  const store = new MemoryStore();
  const policies = new PolicyService(file, store);
  await new PolicySeeder(file, store, policies).seed();
  return policies;
}

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
    const policies = await seeded(file);
    expect(await policies.forDependency('shop', 'payments-api')).toEqual({
      ...DEFAULT_DEPENDENCY_POLICY,
      mode: 'shadow',
      retryBudget: {
        mode: 'adaptive',
        ratio: 0.3,
        maxRatio: 0.5,
        minRetriesPerSecond: 10,
        windowSeconds: 20,
        maxAttempts: 2,
      },
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
    [
      { namespaces: { shop: { limits: { checkout: { rate: 1, periodMs: 1000 } } } } },
      'namespaces.shop.limits.checkout.burst',
    ],
    [
      { namespaces: { shop: { limits: { checkout: { rate: 1, periodMs: 1000, burst: 1, x: 1 } } } } },
      'namespaces.shop.limits.checkout.x',
    ],
    [
      { namespaces: { shop: { limits: { Checkout: { rate: 1, periodMs: 1, burst: 1 } } } } },
      'namespaces.shop.limits.Checkout',
    ],
    [{ namespaces: { shop: { queues: { emails: { maxAttempts: 0 } } } } }, 'namespaces.shop.queues.emails.maxAttempts'],
    [
      { namespaces: { shop: { queues: { emails: { backoff: { baseMs: 90000 } } } } } },
      'namespaces.shop.queues.emails.backoff.capMs',
    ],
    [{ namespaces: { shop: { queues: ['emails'] } } }, 'namespaces.shop.queues must be a mapping'],
    [{ namespaces: { shop: { topics: {} } } }, 'namespaces.shop.topics'],
    [
      { default: { backoff: { capMs: 100 } }, namespaces: { shop: { default: { backoff: { baseMs: 200 } } } } },
      'namespaces.shop.default.backoff.capMs',
    ],
  ])('rejects %j naming %s', (document, field) => {
    expect(() => parsePolicies(document, 'policies.yaml')).toThrow(ConfigError);
    expect(() => parsePolicies(document, 'policies.yaml')).toThrow(field);
  });

  it('reads named limits and queues, and checks a document against what it overlays', () => {
    const file = parsePolicies(
      {
        namespaces: {
          shop: {
            default: { backoff: { capMs: 60000 } },
            // baseMs 5000 is over the built-in capMs, not over this namespace's.
            dependencies: { slow: { backoff: { baseMs: 5000 } } },
            limits: { checkout: { rate: 100, periodMs: 1000, burst: 20 } },
            queues: { emails: { maxAttempts: 8 }, orders: {} },
          },
        },
      },
      'test',
    );
    expect(file.namespaces.shop).toEqual({
      default: { backoff: { capMs: 60000 } },
      dependencies: { slow: { backoff: { baseMs: 5000 } } },
      limits: { checkout: { rate: 100, periodMs: 1000, burst: 20 } },
      queues: { emails: { maxAttempts: 8 }, orders: {} },
    });
  });

  it('reads the example policies file shipped in deploy/', async () => {
    const file = readPoliciesFile(join(__dirname, '../../../../deploy/policies.example.yaml'));
    const policies = await seeded(file);
    expect((await policies.forDependency('shop', 'payments-api')).retryBudget).toEqual({
      mode: 'adaptive',
      ratio: 0.05,
      maxRatio: 0.5,
      minRetriesPerSecond: 10,
      windowSeconds: 10,
      maxAttempts: 2,
    });
    expect((await policies.forDependency('shop', 'search')).mode).toBe('shadow');
  });
});
