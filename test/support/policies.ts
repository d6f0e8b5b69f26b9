import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Writes a policies document to a temp file for SLUICE_POLICIES_FILE; `cleanup` removes it. */
export function writePoliciesFile(document: object): { path: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-policies-'));
  const path = join(dir, 'policies.json');
  writeFileSync(path, JSON.stringify(document));
  return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
