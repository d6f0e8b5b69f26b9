import type { NamespaceList, PolicyDocument, PolicyDocumentItem, PolicyDocumentPage } from '@sluice/protocol';
import type { AdminClient } from './admin-client';
import { segment } from './context';
import { sortKeys } from './json-diff';

/** The API's largest page of policy documents: an export reads a namespace in as few calls as it can. */
const PAGE = 1000;

/** A namespace's stored documents by target (`default`, `deps/<dep>`, `limits/<limit>`, `queues/<queue>`). */
export type NamespaceDocuments = Map<string, PolicyDocument>;

/** The sections of a namespace in the policies file that hold stored documents, by the target's kind. */
export const SECTIONS = { deps: 'dependencies', limits: 'limits', queues: 'queues' } as const;
type Kind = keyof typeof SECTIONS;

/** Every stored document of `ns` with its ETag, read a page at a time. */
export async function readStored(client: AdminClient, ns: string): Promise<PolicyDocumentItem[]> {
  const items: PolicyDocumentItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.get<PolicyDocumentPage>(`admin/v1/${segment(ns)}/policies`, { limit: PAGE, cursor });
    items.push(...page.items);
    cursor = page.next ?? undefined;
  } while (cursor !== undefined);
  return items;
}

/** The namespaces the token covers that hold state or policies. */
export async function coveredNamespaces(client: AdminClient): Promise<string[]> {
  return (await client.get<NamespaceList>('admin/v1/namespaces')).items.map((item) => item.namespace);
}

/**
 * Stored documents as a policies file (SLUICE_POLICIES_FILE's format): `namespaces.<ns>.default`,
 * `.dependencies`, `.limits`, `.queues`, names and fields in sorted order, so the same documents
 * give the same text.
 */
export function toPoliciesFile(namespaces: ReadonlyMap<string, readonly PolicyDocumentItem[]>): object {
  const file: Record<string, Record<string, unknown>> = {};
  for (const ns of [...namespaces.keys()].sort()) {
    const entry: Record<string, Record<string, unknown> | unknown> = {};
    for (const { target, document } of [...(namespaces.get(ns) ?? [])].sort(byTarget)) {
      if (target === 'default') {
        entry.default = sortKeys(document);
        continue;
      }
      const [kind, name] = splitTarget(target);
      const section = ((entry[SECTIONS[kind]] as Record<string, unknown> | undefined) ??= {});
      section[name] = sortKeys(document);
    }
    file[ns] = entry;
  }
  return { namespaces: file };
}

/** The text of an export: YAML or JSON (both are policies files; the YAML library loads only for YAML). */
export async function formatFile(file: object, format: 'json' | 'yaml'): Promise<string> {
  return format === 'yaml' ? (await import('yaml')).stringify(file) : `${JSON.stringify(file, null, 2)}\n`;
}

/** `deps/payments-api` → ['deps', 'payments-api']. */
function splitTarget(target: string): [Kind, string] {
  const slash = target.indexOf('/');
  return [target.slice(0, slash) as Kind, target.slice(slash + 1)];
}

/** The API's order: `default`, then `deps/…`, `limits/…`, `queues/…`, each by name. */
export const byTarget = (a: { target: string }, b: { target: string }): number =>
  a.target < b.target ? -1 : a.target > b.target ? 1 : 0;
