import { writeFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { PolicyDocument, PolicyDocumentItem } from '@sluice/protocol';
import type { AdminClient } from '../admin-client';
import { CliError, usageError } from '../cli-error';
import { confirm } from '../confirm';
import { segment, withContext, type CommandContext } from '../context';
import { readInput } from '../input-file';
import { diffLines, diffText, jsonLines, type DiffLine } from '../json-diff';
import { print } from '../output';
import {
  byTarget,
  coveredNamespaces,
  formatFile,
  readStored,
  toPoliciesFile,
  type NamespaceDocuments,
} from '../policy-documents';

type FileFormat = 'json' | 'yaml';

interface ExportOptions {
  file?: string;
  format?: FileFormat;
}

interface ImportOptions {
  file: string;
  dryRun?: boolean;
  prune?: boolean;
  reason: string;
  yes?: boolean;
}

/** What an import does with one document: store a new one, replace or delete a stored one, or keep it. */
type Action = 'add' | 'replace' | 'delete' | 'keep';

interface Step {
  namespace: string;
  target: string;
  action: Action;
  /** The stored version the step is based on (its precondition); null for a new document. */
  etag: string | null;
  /** The file's document; null for a delete. */
  document: PolicyDocument | null;
  /** From the stored document to the file's (- stored, + file). */
  changes: DiffLine[];
}

const VERBS: Record<Action, { todo: string; done: string }> = {
  add: { todo: 'add', done: 'added' },
  replace: { todo: 'replace', done: 'replaced' },
  delete: { todo: 'delete', done: 'deleted' },
  keep: { todo: 'keep', done: 'kept' },
};

/** `sluice policy export|import`: a namespace's stored documents as a policies file, and back. */
export function registerPolicyTransfer(policy: Command): void {
  policy
    .command('export')
    .description(
      'write the stored policy documents of a namespace (or of every namespace the token covers) as a policies ' +
        'file (the SLUICE_POLICIES_FILE format): a backup to import again, or to boot a coordinator with',
    )
    .argument(
      '[ns]',
      'a namespace; absent: every namespace `sluice namespaces` lists (used within a day) that stores documents',
    )
    .option('-f, --file <path>', 'write to this file instead of stdout')
    .addOption(
      new Option('--format <format>', 'json or yaml (default: yaml for a .yaml or .yml file, json otherwise)').choices([
        'json',
        'yaml',
      ]),
    )
    .action(withContext(exportPolicies));

  policy
    .command('import')
    .description(
      'store the documents of a policies file (an export, or a SLUICE_POLICIES_FILE): new ones are added, ' +
        'changed ones replaced (asked first), identical ones left alone; a bad file changes nothing (exit 2)',
    )
    .argument('[ns]', 'only this namespace of the file')
    .requiredOption('-f, --file <path>', 'the policies file, YAML or JSON (- for stdin)')
    .option('--dry-run', 'show what would change, with each difference (- stored, + file), and change nothing')
    .option('--prune', 'also delete the stored documents the file does not have (in the namespaces it names)')
    .option('--reason <text>', 'why, for the audit log', 'sluice policy import')
    .option('-y, --yes', 'no confirmation before replacing or deleting stored documents')
    .action(withContext(importPolicies));
}

async function exportPolicies({ client, output }: CommandContext, ns: string | undefined, options: ExportOptions) {
  const stored = new Map<string, PolicyDocumentItem[]>();
  for (const namespace of ns ? [ns] : await coveredNamespaces(client)) {
    const items = await readStored(client, namespace);
    if (ns || items.length > 0) stored.set(namespace, items);
  }
  const format = options.format ?? (/\.ya?ml$/i.test(options.file ?? '') ? 'yaml' : 'json');
  const text = await formatFile(toPoliciesFile(stored), format);
  if (options.file === undefined) {
    process.stdout.write(text);
    return;
  }
  try {
    writeFileSync(options.file, text);
  } catch (error) {
    throw new CliError(`cannot write ${options.file}: ${(error as Error).message}`);
  }
  const documents = [...stored.values()].reduce((sum, items) => sum + items.length, 0);
  const summary = { file: options.file, format, namespaces: stored.size, documents };
  print(output, summary, () => `exported ${documents} documents of ${stored.size} namespaces to ${options.file}`);
}

async function importPolicies({ client, output }: CommandContext, ns: string | undefined, options: ImportOptions) {
  const { readImport } = await import('../policies-file-check');
  const read = readImport(readInput(options.file), options.file);
  if (ns !== undefined && !read.namespaces.has(ns)) throw usageError(`${options.file} has no namespace "${ns}"`);
  if (read.skipped.length > 0) {
    process.stderr.write(
      `sluice: not imported: ${read.skipped.join(', ')} (each instance reads these from its own ` +
        'SLUICE_POLICIES_FILE; the store does not hold them)\n',
    );
  }
  const steps: Step[] = [];
  for (const [namespace, documents] of read.namespaces) {
    if (ns === undefined || namespace === ns) {
      steps.push(...plan(namespace, documents, await readStored(client, namespace), options.prune === true));
    }
  }
  const changing = steps.filter((step) => step.action !== 'keep');
  if (options.dryRun) {
    print(output, { dryRun: true, steps }, () =>
      [...changing.map(describeStep), `would ${counts(steps, 'todo')} (dry run: nothing was changed)`].join('\n'),
    );
    return;
  }
  const replacing = changing.filter((step) => step.action !== 'add');
  if (replacing.length > 0) {
    await confirm(
      `This replaces or deletes ${replacing.length} stored policy documents ` +
        `(${replacing.map((step) => `${step.namespace} ${step.target}`).join(', ')}); ` +
        '--dry-run shows each difference. Go ahead?',
      options.yes,
    );
  }
  const applied: Array<Step & { newEtag: string | null }> = [];
  for (const step of changing) {
    try {
      applied.push({ ...step, newEtag: await apply(client, step, options.reason) });
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      const done = applied.map((at) => `${VERBS[at.action].done} ${at.namespace} ${at.target}`);
      throw new CliError(
        `${error.message}\nStopped at ${step.namespace} ${step.target}, after ${applied.length} of ${changing.length} ` +
          `changes${done.length > 0 ? ` (${done.join(', ')})` : ''}; run the import again to finish it.`,
        error.exitCode,
      );
    }
  }
  const result = { dryRun: false, steps: [...applied, ...steps.filter((step) => step.action === 'keep')] };
  print(output, result, () =>
    [
      ...applied.map(
        (step) =>
          `${VERBS[step.action].done} ${step.namespace} ${step.target}${step.newEtag ? `: ETag ${step.newEtag}` : ''}`,
      ),
      `imported ${options.file}: ${counts(steps, 'done')}`,
    ].join('\n'),
  );
}

/**
 * What importing `documents` into `namespace` does, given what it stores: writes in the API's order
 * (the namespace default first, which its dependencies are checked against), then deletes (--prune).
 */
function plan(namespace: string, documents: NamespaceDocuments, stored: PolicyDocumentItem[], prune: boolean): Step[] {
  const current = new Map(stored.map((item) => [item.target, item]));
  const writes = [...documents]
    .map(([target, document]) => ({ target, document }))
    .sort(byTarget)
    .map(({ target, document }): Step => {
      const before = current.get(target);
      const changes = diffLines(before ? jsonLines(before.document) : [], jsonLines(document));
      const action = !before ? 'add' : changes.every((line) => line.op === ' ') ? 'keep' : 'replace';
      return { namespace, target, action, etag: before?.etag ?? null, document, changes };
    });
  const deletes = prune
    ? stored
        .filter((item) => !documents.has(item.target))
        .map((item): Step => ({
          namespace,
          target: item.target,
          action: 'delete',
          etag: item.etag,
          document: null,
          changes: diffLines(jsonLines(item.document), []),
        }))
    : [];
  return [...writes, ...deletes];
}

/**
 * One step through the admin API, on the condition it was planned on (`If-None-Match: *` for a new
 * document, `If-Match` with the ETag read otherwise): a document changed meanwhile is not overwritten.
 * Answers the new ETag (null for a delete).
 */
async function apply(client: AdminClient, step: Step, reason: string): Promise<string | null> {
  const path = `admin/v1/${segment(step.namespace)}/policies/${step.target}`;
  const response = await client.request<unknown>(step.action === 'delete' ? 'DELETE' : 'PUT', path, {
    body: step.document ?? undefined,
    query: { reason },
    headers: step.etag === null ? { 'if-none-match': '*' } : { 'if-match': step.etag },
    accept: [412],
  });
  if (response.status === 412) {
    throw new CliError(
      `${step.namespace} ${step.target} changed since the import read it (412 precondition_failed): not overwritten.`,
    );
  }
  return response.headers.get('etag');
}

function describeStep(step: Step): string {
  const heading = `${step.action} ${step.namespace} ${step.target}${step.etag ? ` (stored ETag ${step.etag})` : ''}`;
  return `${heading}\n${diffText(step.changes)}`;
}

/** `add 1, replace 2, delete 0 and keep 4 unchanged` (or `added 1, …`). */
function counts(steps: Step[], tense: 'todo' | 'done'): string {
  const count = (action: Action) => `${VERBS[action][tense]} ${steps.filter((step) => step.action === action).length}`;
  return `${count('add')}, ${count('replace')}, ${count('delete')} and ${count('keep')} unchanged`;
}
