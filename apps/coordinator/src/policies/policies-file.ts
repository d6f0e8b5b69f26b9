import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { RESOURCE_NAME_PATTERN, type DependencyPolicyOverride } from '@sluice/protocol';
import { ConfigError } from '../config/config-error';
import { validatePolicyOverride } from './policy-validation';

const VARIABLE = 'SLUICE_POLICIES_FILE';

/**
 * The policies file (YAML or JSON):
 * ```yaml
 * default: { retryBudget: { ratio: 0.2 } }        # every namespace
 * namespaces:
 *   shop:
 *     default: { backoff: { jitter: decorrelated } }
 *     dependencies:
 *       payments-api: { retryBudget: { maxAttempts: 2 } }
 * ```
 */
export interface PoliciesFile {
  default?: DependencyPolicyOverride;
  namespaces: Record<
    string,
    { default?: DependencyPolicyOverride; dependencies: Record<string, DependencyPolicyOverride> }
  >;
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
  allowOnly(root, ['default', 'namespaces'], '', source);
  const file: PoliciesFile = { namespaces: {} };
  if (root.default !== undefined) file.default = policyAt(root.default, 'default.', source);
  const namespaces = root.namespaces === undefined ? {} : asRecord(root.namespaces, 'namespaces', source);
  for (const [namespace, value] of Object.entries(namespaces)) {
    const path = `namespaces.${namespace}`;
    checkName(namespace, path, source);
    const entry = asRecord(value, path, source);
    allowOnly(entry, ['default', 'dependencies'], `${path}.`, source);
    const dependencies: Record<string, DependencyPolicyOverride> = {};
    const listed = entry.dependencies === undefined ? {} : asRecord(entry.dependencies, `${path}.dependencies`, source);
    for (const [dependency, policy] of Object.entries(listed)) {
      const dependencyPath = `${path}.dependencies.${dependency}`;
      checkName(dependency, dependencyPath, source);
      dependencies[dependency] = policyAt(policy, `${dependencyPath}.`, source);
    }
    file.namespaces[namespace] = {
      default: entry.default === undefined ? undefined : policyAt(entry.default, `${path}.default.`, source),
      dependencies,
    };
  }
  return file;
}

function policyAt(value: unknown, path: string, source: string): DependencyPolicyOverride {
  const result = validatePolicyOverride(value, path);
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
