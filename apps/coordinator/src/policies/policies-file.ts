import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import {
  RESOURCE_NAME_PATTERN,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type QueuePolicyOverride,
} from '@sluice/protocol';
import { ConfigError } from '../config/config-error';
import {
  validateIdempotencyPolicy,
  validatePolicyOverride,
  validateQueuePolicyOverride,
  type Validation,
} from './policy-validation';

const VARIABLE = 'SLUICE_POLICIES_FILE';

/**
 * The policies file (YAML or JSON):
 * ```yaml
 * default: { retryBudget: { ratio: 0.2 } }        # every dependency of every namespace
 * queueDefault: { maxAttempts: 8 }                 # every queue of every namespace
 * idempotency: { retentionSeconds: 86400, maxRetentionSeconds: 604800 }
 * namespaces:
 *   shop:
 *     default: { backoff: { jitter: decorrelated } }
 *     dependencies:
 *       payments-api: { retryBudget: { maxAttempts: 2 } }
 *     queueDefault: { backoff: { baseMs: 500 } }
 *     queues:
 *       emails: { maxAttempts: 3 }
 *     idempotency: { retentionSeconds: 3600 }
 * ```
 */
export interface PoliciesFile {
  default?: DependencyPolicyOverride;
  queueDefault?: QueuePolicyOverride;
  idempotency?: Partial<IdempotencyPolicy>;
  namespaces: Record<string, NamespacePolicies>;
}

export interface NamespacePolicies {
  default?: DependencyPolicyOverride;
  dependencies: Record<string, DependencyPolicyOverride>;
  queueDefault?: QueuePolicyOverride;
  queues?: Record<string, QueuePolicyOverride>;
  idempotency?: Partial<IdempotencyPolicy>;
}

export function readPoliciesFile(path: string): PoliciesFile {
  let document: unknown;
  try {
    document = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(VARIABLE, `cannot read policies from ${path} (${(error as Error).message})`);
  }
  return parsePolicies(document ?? {}, path);
}

export function parsePolicies(document: unknown, source: string): PoliciesFile {
  const root = asRecord(document, '', source);
  allowOnly(root, ['default', 'queueDefault', 'idempotency', 'namespaces'], '', source);
  const file: PoliciesFile = { namespaces: {} };
  if (root.default !== undefined) file.default = policyAt(root.default, 'default.', source);
  if (root.queueDefault !== undefined) {
    file.queueDefault = sectionAt(validateQueuePolicyOverride, root.queueDefault, 'queueDefault.', source);
  }
  if (root.idempotency !== undefined) {
    file.idempotency = sectionAt(validateIdempotencyPolicy, root.idempotency, 'idempotency.', source);
  }
  const namespaces = root.namespaces === undefined ? {} : asRecord(root.namespaces, 'namespaces', source);
  for (const [namespace, value] of Object.entries(namespaces)) {
    const path = `namespaces.${namespace}`;
    checkName(namespace, path, source);
    const entry = asRecord(value, path, source);
    allowOnly(entry, ['default', 'dependencies', 'queueDefault', 'queues', 'idempotency'], `${path}.`, source);
    file.namespaces[namespace] = {
      default: entry.default === undefined ? undefined : policyAt(entry.default, `${path}.default.`, source),
      dependencies: namedSections(entry.dependencies, `${path}.dependencies`, source, validatePolicyOverride),
      queueDefault:
        entry.queueDefault === undefined
          ? undefined
          : sectionAt(validateQueuePolicyOverride, entry.queueDefault, `${path}.queueDefault.`, source),
      queues: namedSections(entry.queues, `${path}.queues`, source, validateQueuePolicyOverride),
      idempotency:
        entry.idempotency === undefined
          ? undefined
          : sectionAt(validateIdempotencyPolicy, entry.idempotency, `${path}.idempotency.`, source),
    };
  }
  return file;
}

function policyAt(value: unknown, path: string, source: string): DependencyPolicyOverride {
  return sectionAt(validatePolicyOverride, value, path, source);
}

/** A mapping of named policies (`dependencies`, `queues`), each validated by `validate`. */
function namedSections<T>(
  value: unknown,
  path: string,
  source: string,
  validate: (value: unknown, path: string) => Validation<T>,
): Record<string, T> {
  const sections: Record<string, T> = {};
  const listed = value === undefined ? {} : asRecord(value, path, source);
  for (const [name, section] of Object.entries(listed)) {
    checkName(name, `${path}.${name}`, source);
    sections[name] = sectionAt(validate, section, `${path}.${name}.`, source);
  }
  return sections;
}

function sectionAt<T>(
  validate: (value: unknown, path: string) => Validation<T>,
  value: unknown,
  path: string,
  source: string,
): T {
  const result = validate(value, path);
  if (!result.ok) {
    const [problem] = result.problems;
    throw new ConfigError(VARIABLE, `${source}: ${problem.field}: ${problem.message}`);
  }
  return result.policy;
}

function asRecord(value: unknown, path: string, source: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(VARIABLE, `${source}: ${path || 'the document'} must be a mapping`);
  }
  return value as Record<string, unknown>;
}

function allowOnly(record: Record<string, unknown>, allowed: string[], path: string, source: string): void {
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) throw new ConfigError(VARIABLE, `${source}: ${path}${key} is not a known field`);
  }
}

function checkName(name: string, path: string, source: string): void {
  if (!RESOURCE_NAME_PATTERN.test(name)) {
    throw new ConfigError(VARIABLE, `${source}: ${path} must match ${RESOURCE_NAME_PATTERN.source}`);
  }
}
