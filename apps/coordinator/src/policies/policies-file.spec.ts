import { DEFAULT_DEPENDENCY_POLICY, DEFAULT_QUEUE_POLICY } from '@sluice/protocol';
import { ConfigError } from '../config/config-error';
import { join } from 'node:path';
import { parsePolicies, readPoliciesFile } from './policies-file';
import { PolicyService } from './policy.service';

describe('policies file', () => {
  it('overlays the file default, the namespace default and the dependency policy, in that order', () => {
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
    expect(policies.forDependency('shop', 'payments-api')).toEqual({
      ...DEFAULT_DEPENDENCY_POLICY,
      mode: 'shadow',
      retryBudget: { ratio: 0.3, minRetriesPerSecond: 10, windowSeconds: 20, maxAttempts: 2 },
      backoff: { baseMs: 50, capMs: 2000, jitter: 'decorrelated' },
    });
    expect(policies.forDependency('shop', 'search').retryBudget.maxAttempts).toBe(3);
    expect(policies.forDependency('other', 'search').retryBudget.ratio).toBe(0.2);
  });

  it('resolves queue policies: defaults, file queueDefault, namespace queueDefault, then the queue', () => {
    const policies = new PolicyService(
      parsePolicies(
        {
          queueDefault: { maxAttempts: 8 },
          namespaces: {
            shop: {
              queueDefault: { backoff: { baseMs: 500 } },
              queues: { emails: { maxAttempts: 3, backoff: { jitter: 'none' } } },
            },
          },
        },
        'test',
      ),
    );
    expect(policies.forQueue('shop', 'emails')).toEqual({
      maxAttempts: 3,
      backoff: { baseMs: 500, capMs: 60000, jitter: 'none' },
    });
    expect(policies.forQueue('shop', 'orders')).toEqual({
      maxAttempts: 8,
      backoff: { baseMs: 500, capMs: 60000, jitter: 'full' },
    });
    expect(policies.forQueue('other', 'orders')).toEqual({ ...DEFAULT_QUEUE_POLICY, maxAttempts: 8 });
    expect(new PolicyService({ namespaces: {} }).forQueue('shop', 'orders')).toEqual({
      maxAttempts: 5,
      backoff: { baseMs: 1000, capMs: 60000, jitter: 'full' },
    });
  });

  it('resolves idempotency retention: 24 h by default, within the maximum of each level', () => {
    const policies = new PolicyService(
      parsePolicies(
        {
          idempotency: { retentionSeconds: 7200 },
          namespaces: { shop: { idempotency: { maxRetentionSeconds: 3600 } }, ops: {} },
        },
        'test',
      ),
    );
    expect(policies.forIdempotency('ops')).toEqual({ retentionSeconds: 7200, maxRetentionSeconds: 604800 });
    expect(policies.forIdempotency('shop')).toEqual({ retentionSeconds: 3600, maxRetentionSeconds: 3600 });
    expect(new PolicyService({ namespaces: {} }).forIdempotency('shop')).toEqual({
      retentionSeconds: 86400,
      maxRetentionSeconds: 604800,
    });
  });

  it.each([
    [{ queueDefault: { maxAttempts: 0 } }, 'queueDefault.maxAttempts'],
    [{ namespaces: { shop: { queues: { Emails: {} } } } }, 'namespaces.shop.queues.Emails'],
    [
      { namespaces: { shop: { queues: { emails: { maxAttempts: 101 } } } } },
      'namespaces.shop.queues.emails.maxAttempts',
    ],
    [
      { namespaces: { shop: { queues: { emails: { backoff: { baseMs: 10, capMs: 5 } } } } } },
      'namespaces.shop.queues.emails.backoff.capMs',
    ],
    [{ namespaces: { shop: { queueDefault: { ratio: 1 } } } }, 'namespaces.shop.queueDefault.ratio'],
    [{ namespaces: { shop: { queues: [] } } }, 'namespaces.shop.queues'],
    [{ idempotency: { retentionSeconds: 604801 } }, 'idempotency.retentionSeconds'],
    [{ idempotency: { retentionSeconds: 100, maxRetentionSeconds: 50 } }, 'idempotency.retentionSeconds'],
    [{ namespaces: { shop: { idempotency: { leaseMs: 5 } } } }, 'namespaces.shop.idempotency.leaseMs'],
  ])('rejects the queue or idempotency section %j naming %s', (document, field) => {
    expect(() => parsePolicies(document, 'policies.yaml')).toThrow(field);
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

  it('reads the example policies file shipped in deploy/', () => {
    const file = readPoliciesFile(join(__dirname, '../../../../deploy/policies.example.yaml'));
    const policies = new PolicyService(file);
    expect(policies.forDependency('shop', 'payments-api').retryBudget).toEqual({
      ratio: 0.05,
      minRetriesPerSecond: 10,
      windowSeconds: 10,
      maxAttempts: 2,
    });
    expect(policies.forDependency('shop', 'search').mode).toBe('shadow');
    expect(policies.forQueue('shop', 'emails')).toEqual({
      maxAttempts: 3,
      backoff: { baseMs: 2000, capMs: 60000, jitter: 'full' },
    });
    expect(policies.forIdempotency('shop').retentionSeconds).toBe(86400);
  });
});
