import { parse } from 'yaml';
import type { PolicyDocument } from '@sluice/protocol';
import { ConfigError } from '../../coordinator/src/config/config-error';
import { parsePolicies, type PoliciesFile } from '../../coordinator/src/policies/policies-file';
import { usageError } from './cli-error';
import { SECTIONS, type NamespaceDocuments } from './policy-documents';

// The coordinator's own reader of SLUICE_POLICIES_FILE (and the validation behind it), so an import
// accepts exactly what a boot accepts. It brings class-validator along: `policy import` loads this
// module when it runs, so no other command pays for it.

/**
 * Settings of the policies file that no store holds: every instance reads them from its own copy
 * of the file. They are not exported, and an import leaves them out (and says so).
 */
const FILE_ONLY = { top: ['default', 'queueDefault', 'idempotency'], namespace: ['queueDefault', 'idempotency'] };

/** What an import found in a policies file: each namespace's documents, and what it leaves out. */
export interface ImportDocument {
  namespaces: Map<string, NamespaceDocuments>;
  /** Paths of file-only settings present in the file (not stored, so not imported). */
  skipped: string[];
}

/**
 * Reads a policies file (YAML or JSON) as the coordinator reads SLUICE_POLICIES_FILE, with the same
 * checks: a bad document is bad usage, every problem named by its field.
 */
export function readImport(text: string, source: string): ImportDocument {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (error) {
    throw usageError(`${source} is neither YAML nor JSON: ${(error as Error).message}`);
  }
  let file: PoliciesFile;
  try {
    file = parsePolicies(raw ?? {}, source);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // Each problem says `<source>: <field>: <what>`; the source is said once, first.
    const problems = error.problems.map((problem) => `\n  ${problem.message.replace(`${source}: `, '')}`).join('');
    throw usageError(`${source} is not a valid policies document; nothing was changed:${problems}`);
  }
  const namespaces = new Map<string, NamespaceDocuments>();
  const skipped = FILE_ONLY.top.filter((name) => (raw as Record<string, unknown>)[name] !== undefined);
  for (const [ns, entry] of Object.entries(file.namespaces)) {
    const documents: NamespaceDocuments = new Map();
    if (entry.default !== undefined) documents.set('default', entry.default);
    for (const [kind, section] of Object.entries(SECTIONS) as Array<[string, keyof typeof entry]>) {
      const named = (entry[section] ?? {}) as Record<string, PolicyDocument>;
      for (const [name, document] of Object.entries(named)) documents.set(`${kind}/${name}`, document);
    }
    namespaces.set(ns, documents);
    for (const name of FILE_ONLY.namespace) {
      if (entry[name as keyof typeof entry] !== undefined) skipped.push(`namespaces.${ns}.${name}`);
    }
  }
  return { namespaces, skipped };
}
