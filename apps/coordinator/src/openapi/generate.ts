import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { OpenAPIObject } from '@nestjs/swagger';
import { createCoordinator } from '../bootstrap';
import { loadConfig } from '../config/config';
import { DOCUMENT_PATH } from './document';

/**
 * `npm run openapi`: writes the document the service serves at /docs-json to deploy/openapi.json
 * (or to the file named after `--`) for SDK generators, formatted with the repository's Prettier
 * settings so that `npm run format` leaves it as it is. `npm run openapi -- --check` writes nothing
 * and exits 1 when the file is not what the code serves. Run from the repository root. The app is
 * built, not started: the embedded store, no network, no configuration read.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const file = resolve(args.find((arg) => !arg.startsWith('--')) ?? 'deploy/openapi.json');
  const document = await servedDocument();
  const text = formatDocument(document, file);
  if (check) {
    const current = readFileOrEmpty(file);
    if (current !== text) {
      console.error(`${file} is out of date: run npm run openapi`);
      process.exit(1);
    }
    console.log(`${file} is up to date`);
    return;
  }
  writeFileSync(file, text);
  const operations = Object.values(document.paths).reduce((count, item) => count + Object.keys(item).length, 0);
  console.log(`wrote ${file}: ${Object.keys(document.paths).length} paths, ${operations} operations`);
}

/** What GET /docs-json answers. */
export async function servedDocument(): Promise<OpenAPIObject> {
  const app = await createCoordinator({ ...loadConfig({}), logLevel: 'silent' });
  try {
    const response = await app.inject({ method: 'GET', url: DOCUMENT_PATH });
    if (response.statusCode !== 200) throw new Error(`GET ${DOCUMENT_PATH} answered ${response.statusCode}`);
    return response.json<OpenAPIObject>();
  } finally {
    await app.close();
  }
}

/**
 * The file's text: the document (keys already sorted) as JSON, formatted by the repository's
 * Prettier. Prettier is a development tool, run as a command: the built service does not need it.
 */
export function formatDocument(document: OpenAPIObject, file: string): string {
  const prettier = resolve('node_modules/prettier/bin/prettier.cjs');
  return execFileSync(process.execPath, [prettier, '--stdin-filepath', file], {
    input: JSON.stringify(document),
    encoding: 'utf8',
  });
}

function readFileOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error((error as Error).stack ?? String(error));
    process.exit(1);
  });
}
