import type { Command } from 'commander';
import type { DependencyView } from '@sluice/protocol';
import type { AdminClient } from '../admin-client';
import { CliError, usageError } from '../cli-error';
import { segment, withContext } from '../context';
import { readInput } from '../input-file';
import { diffLines, diffText, jsonLines, type DiffLine } from '../json-diff';
import { print } from '../output';
import { registerPolicyTransfer } from './policy-transfer';

/** A stored policy document and its version. */
export interface StoredPolicy {
  etag: string | null;
  document: unknown;
}

const TARGET_HELP =
  '`default`, `deps/<dep>`, `limits/<limit>` or `queues/<queue>` (a bare name is a dependency: `payments-api`)';
const TARGET = /^(default|(deps|limits|queues)\/[^/]+)$/;

/**
 * `sluice policy get|put|diff <ns> <target>`: the namespace's stored policy documents, with ETags;
 * `sluice policy export|import`: all of them as a policies file (policy-transfer.ts).
 */
export function registerPolicy(program: Command): void {
  const policy = program
    .command('policy')
    .description('read, write and compare stored policy documents (versioned by ETag)');

  policy
    .command('get')
    .description('print a stored policy document and its ETag')
    .argument('<ns>', 'the namespace')
    .argument('<target>', TARGET_HELP)
    .action(
      withContext(async ({ client, output }, ns: string, target: string) => {
        const stored = await read(client, ns, target);
        if (stored) {
          print(output, stored, () => `ETag ${stored.etag}\n${policyText(stored.document)}`);
          return;
        }
        // Nothing stored is not an error: a dependency then follows the defaults, shown as in effect.
        const path = pathOf(target);
        const dependency = /^deps\/(.+)$/.exec(path)?.[1];
        const effective = dependency
          ? (await client.get<DependencyView>(`v1/${segment(ns)}/deps/${dependency}`)).policy
          : null;
        print(output, { etag: null, document: null, effective }, () =>
          effective
            ? `namespace ${ns} stores no document for ${path}: it follows the defaults. In effect:\n` +
              policyText(effective)
            : `namespace ${ns} stores no document for ${path}`,
        );
      }),
    );

  policy
    .command('put')
    .description('store a policy document; with --if-match, only over that version (a newer one is shown)')
    .argument('<ns>', 'the namespace')
    .argument('<target>', TARGET_HELP)
    .requiredOption('-f, --file <path>', 'the JSON document (- for stdin)')
    .option('--if-match <etag>', 'the ETag the document must still have (from policy get): refused, 412, if newer')
    .option('--reason <text>', 'why, for the audit log')
    .action(
      withContext(
        async (
          { client, output },
          ns: string,
          target: string,
          options: { file: string; ifMatch?: string; reason?: string },
        ) => {
          const document = readDocument(options.file);
          const path = `admin/v1/${segment(ns)}/policies/${pathOf(target)}`;
          const response = await client.request<unknown>('PUT', path, {
            body: document,
            query: { reason: options.reason },
            headers: options.ifMatch ? { 'if-match': quoted(options.ifMatch) } : {},
            accept: [412],
          });
          if (response.status === 412) throw await conflict(client, ns, target, document, output === 'json');
          const stored = { etag: response.headers.get('etag'), document: response.body };
          print(output, stored, () => `stored ${pathOf(target)} of ${ns}: ETag ${stored.etag}`);
        },
      ),
    );

  policy
    .command('diff')
    .description('compare the stored document with a file (- lines stored, + lines in the file)')
    .argument('<ns>', 'the namespace')
    .argument('<target>', TARGET_HELP)
    .requiredOption('-f, --file <path>', 'the JSON document (- for stdin)')
    .action(
      withContext(async ({ client, output }, ns: string, target: string, options: { file: string }) => {
        const document = readDocument(options.file);
        const stored = await read(client, ns, target);
        const changes = diffOf(stored?.document ?? null, document);
        const same = changes.every((line) => line.op === ' ');
        print(output, { etag: stored?.etag ?? null, same, changes }, () =>
          same
            ? 'no differences'
            : `--- stored (ETag ${stored?.etag ?? 'none'})\n+++ ${options.file}\n${diffText(changes)}`,
        );
      }),
    );

  registerPolicyTransfer(policy);
}

/** The target's path under `…/policies/`: `default` or `<kind>/<name>`. */
function pathOf(target: string): string {
  const full = target.includes('/') || target === 'default' ? target : `deps/${target}`;
  if (!TARGET.test(full)) throw usageError(`a policy target is ${TARGET_HELP}, not "${target}"`);
  return full.split('/').map(segment).join('/');
}

async function read(client: AdminClient, ns: string, target: string): Promise<StoredPolicy | undefined> {
  const response = await client.request<unknown>('GET', `admin/v1/${segment(ns)}/policies/${pathOf(target)}`, {
    accept: [404],
  });
  return response.status === 404 ? undefined : { etag: response.headers.get('etag'), document: response.body };
}

function readDocument(file: string): unknown {
  const text = readInput(file);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw usageError(`${file} is not JSON: ${(error as Error).message}`);
  }
}

/** A policy (a document, or the one in effect) as `policy get` prints it: its JSON, keys sorted. */
export const policyText = (policy: unknown): string => jsonLines(policy).join('\n');

const quoted = (etag: string) => (etag.startsWith('"') || etag.startsWith('W/') ? etag : `"${etag}"`);

const diffOf = (stored: unknown, sent: unknown): DiffLine[] =>
  diffLines(stored === null ? [] : jsonLines(stored), jsonLines(sent));

/** A 412: the document changed since the operator's ETag. Shows the newer version and how it differs. */
async function conflict(client: AdminClient, ns: string, target: string, sent: unknown, json: boolean) {
  const current = await read(client, ns, target);
  const changes = diffOf(current?.document ?? null, sent);
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ error: 'precondition_failed', current: current ?? null, changes }, null, 2)}\n`,
    );
  }
  const shown = current
    ? `The stored version is now ETag ${current.etag}:\n${jsonLines(current.document).join('\n')}\n` +
      `Your document against it (- stored, + yours):\n${diffText(changes)}`
    : 'The document has been deleted meanwhile.';
  return new CliError(
    `policy ${pathOf(target)} of ${ns} changed since the ETag given (412 precondition_failed): nothing was stored.\n${shown}\n` +
      'Get it again (sluice policy get), merge, and put with its ETag.',
  );
}
