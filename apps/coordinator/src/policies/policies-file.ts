import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import {
  DEFAULT_DEPENDENCY_POLICY,
  RESOURCE_NAME_PATTERN,
  mergeDependencyPolicy,
  type DependencyPolicy,
  type DependencyPolicyOverride,
  type IdempotencyPolicy,
  type QueuePolicyOverride,
  type NamedLimitPolicy,
} from '@sluice/protocol';
import { ConfigError } from '../config/config-error';
import type { FieldProblem } from '../config/validation-messages';
import {
  validateIdempotencyPolicy,
  validatePolicyOverride,
  validateQueuePolicy,
  validateRateLimit,
  type Validation,
} from './policy-validation';

const VARIABLE = 'SLUICE_POLICIES_FILE';

/**
 * The policies file (YAML or JSON):
 * ```yaml
 * default: { retryBudget: { ratio: 0.2 } }        # every namespace, kept in each instance
 * namespaces:                                     # seeded into the store at boot
 *   shop:
 *     default: { backoff: { jitter: decorrelated } }
 *     dependencies:
 *       payments-api: { retryBudget: { maxAttempts: 2 } }
 *     limits:
 *       checkout: { rate: 100, periodMs: 1000, burst: 20 }
 *     queues:
 *       emails: { maxAttempts: 8, backoff: { baseMs: 2000 } }
 *     queueDefault: { backoff: { baseMs: 500 } }     # every queue of shop, in process
 *     idempotency: { retentionSeconds: 3600 }          # in process
 * queueDefault: { maxAttempts: 8 }                    # every queue, in process
 * idempotency: { retentionSeconds: 86400, maxRetentionSeconds: 604800 }
 * ```
 * The top-level `default` is read by every instance from its own copy of the file. The documents
 * under `namespaces` are written to the store at boot only where the store has none, so once
 * there they belong to the admin API: a later edit of the file does not replace them.
 */
export interface PoliciesFile {
  default?: DependencyPolicyOverride;
  /** Every queue of every namespace, under the queue's own document. */
  queueDefault?: QueuePolicyOverride;
  /** How long idempotency keys are kept, in every namespace. */
  idempotency?: Partial<IdempotencyPolicy>;
  namespaces: Record<string, NamespacePoliciesFile>;
}

export interface NamespacePoliciesFile {
  default?: DependencyPolicyOverride;
  dependencies: Record<string, DependencyPolicyOverride>;
  limits?: Record<string, NamedLimitPolicy>;
  queues?: Record<string, QueuePolicyOverride>;
  /** Every queue of the namespace, under the queue's own document. */
  queueDefault?: QueuePolicyOverride;
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
  const file: PoliciesFile = {
    namespaces: {},
    queueDefault: optional(root.queueDefault, (value) => checked(validateQueuePolicy(value, 'queueDefault.'), source)),
    idempotency: optional(root.idempotency, (value) =>
      checked(validateIdempotencyPolicy(value, 'idempotency.'), source),
    ),
  };
  if (root.default !== undefined) file.default = policyAt(root.default, 'default.', source);
  // Rules across fields are checked on what each document is overlaid on: the file's default for
  // a namespace default, and that namespace default for its dependencies.
  const fileBase = mergeDependencyPolicy(DEFAULT_DEPENDENCY_POLICY, file.default);
  const namespaces = root.namespaces === undefined ? {} : asRecord(root.namespaces, 'namespaces', source);
  for (const [namespace, value] of Object.entries(namespaces)) {
    const path = `namespaces.${namespace}`;
    checkName(namespace, path, source);
    const entry = asRecord(value, path, source);
    allowOnly(
      entry,
      ['default', 'dependencies', 'limits', 'queues', 'queueDefault', 'idempotency'],
      `${path}.`,
      source,
    );
    const namespaceDefault =
      entry.default === undefined ? undefined : policyAt(entry.default, `${path}.default.`, source, fileBase);
    const namespaceBase = mergeDependencyPolicy(fileBase, namespaceDefault);
    file.namespaces[namespace] = {
      default: namespaceDefault,
      dependencies: namedDocuments(entry.dependencies, `${path}.dependencies`, source, (document, at) =>
        policyAt(document, at, source, namespaceBase),
      ),
      limits: namedDocuments(entry.limits, `${path}.limits`, source, (document, at) =>
        checked(validateRateLimit(document, at), source),
      ),
      queues: namedDocuments(entry.queues, `${path}.queues`, source, (document, at) =>
        checked(validateQueuePolicy(document, at), source),
      ),
      queueDefault: optional(entry.queueDefault, (document) =>
        checked(validateQueuePolicy(document, `${path}.queueDefault.`), source),
      ),
      idempotency: optional(entry.idempotency, (document) =>
        checked(validateIdempotencyPolicy(document, `${path}.idempotency.`), source),
      ),
    };
  }
  return file;
}

/** A mapping of named documents (dependencies, limits or queues), each name and document checked. */
function namedDocuments<T>(
  value: unknown,
  path: string,
  source: string,
  parse: (document: unknown, path: string) => T,
): Record<string, T> {
  const documents: Record<string, T> = {};
  const listed = value === undefined ? {} : asRecord(value, path, source);
  for (const [name, document] of Object.entries(listed)) {
    checkName(name, `${path}.${name}`, source);
    documents[name] = parse(document, `${path}.${name}.`);
  }
  return documents;
}

function optional<T>(value: unknown, parse: (value: unknown) => T): T | undefined {
  return value === undefined ? undefined : parse(value);
}

function policyAt(
  value: unknown,
  path: string,
  source: string,
  base: DependencyPolicy = DEFAULT_DEPENDENCY_POLICY,
): DependencyPolicyOverride {
  return checked(validatePolicyOverride(value, path, base), source);
}

function checked<T>(result: Validation<T>, source: string): T {
  if (!result.ok) {
    // Every field's first problem, so one boot says all that is wrong with a document.
    const seen = new Set<string>();
    const first = result.problems.filter((problem) => !seen.has(problem.field) && seen.add(problem.field));
    throw new ConfigError(
      first.map((problem) => ({ variable: VARIABLE, message: `${source}: ${problemText(problem)}` })),
    );
  }
  return result.policy;
}

/** `a.b.ratio: must be a number` (the message's own leading field name dropped). */
function problemText(problem: FieldProblem): string {
  const name = problem.field.slice(problem.field.lastIndexOf('.') + 1);
  return `${problem.field}: ${problem.message.startsWith(`${name} `) ? problem.message.slice(name.length + 1) : problem.message}`;
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
