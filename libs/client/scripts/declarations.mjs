// The package's types: tsc's declarations of the client and of the libs it reaches through the
// path aliases, rolled up by api-extractor into one .d.ts per entry, @sluice/core and
// @sluice/protocol bundled in.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';

const require = createRequire(import.meta.url);
export const PACKAGE_DIR = join(import.meta.dirname, '..');
const NODE_MODULES = join(PACKAGE_DIR, '../../node_modules');
/** The main entry's rollup, where the `nest` entry's `import … from '@sluice/client'` finds it. */
const CLIENT_ROLLUP = 'node_modules/@sluice/client/index.d.ts';
const QUIET = new Set(['console-preamble', 'console-compiler-version-notice']);

/** The package's entries, main first: the declaration tsc emits, its rollup, its place in dist/. */
export const ENTRIES = [
  { name: 'client', declaration: 'client/src/index.d.ts', rollup: CLIENT_ROLLUP, dist: 'index.d.ts' },
  { name: 'nest', declaration: 'client/src/nest/index.d.ts', rollup: 'nest.d.ts', dist: 'nest/index.d.ts' },
];

/**
 * Calls `use` with a temporary directory holding tsc's declarations of libs/client/src and of
 * libs/core and libs/protocol it imports (client/src, core/src, protocol/src), then removes it.
 * Their declaration maps let api-extractor name the source lines in its findings.
 */
export function withDeclarations(use) {
  const typesDir = mkdtempSync(join(tmpdir(), 'sluice-client-types-'));
  try {
    execFileSync(
      process.execPath,
      [require.resolve('typescript/bin/tsc'), '-p', join(PACKAGE_DIR, 'tsconfig.build.json'), '--outDir', typesDir],
      { stdio: 'inherit' },
    );
    // The `nest` entry imports the main one as the package it is: `@sluice/client`, an external
    // package to api-extractor, so that import stays in nest's rollup and both share one `Sluice`.
    mkdirSync(join(typesDir, 'node_modules/@sluice/client'), { recursive: true });
    writeFileSync(
      join(typesDir, 'node_modules/@sluice/client/package.json'),
      JSON.stringify({ name: '@sluice/client', types: 'index.d.ts' }),
    );
    return use(typesDir);
  } finally {
    rmSync(typesDir, { recursive: true, force: true });
  }
}

/**
 * Runs api-extractor on one entry of the tree `withDeclarations` wrote: writes its rollup there;
 * `report` compares the public surface with api/<name>.api.md (`update` rewrites that file).
 * Returns whether the run succeeded.
 */
export function extract(entry, typesDir, { report = false, update = false } = {}) {
  const config = ExtractorConfig.prepare({
    configObjectFullPath: undefined,
    packageJsonFullPath: join(PACKAGE_DIR, 'package.json'),
    configObject: {
      projectFolder: PACKAGE_DIR,
      mainEntryPointFilePath: join(typesDir, entry.declaration),
      bundledPackages: ['@sluice/core', '@sluice/protocol'],
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            strict: true,
            types: ['node'],
            typeRoots: [join(NODE_MODULES, '@types')],
            baseUrl: typesDir,
            // tsconfig.json's aliases, onto the emitted declarations; the peers from the repository.
            paths: {
              '@sluice/core': ['core/src'],
              '@sluice/protocol': ['protocol/src'],
              '*': [join(NODE_MODULES, '*')],
            },
          },
          files: [join(typesDir, entry.declaration)],
        },
      },
      apiReport: {
        enabled: report,
        reportFileName: entry.name,
        reportFolder: join(PACKAGE_DIR, 'api'),
        reportTempFolder: join(typesDir, 'api'),
      },
      docModel: { enabled: false },
      tsdocMetadata: { enabled: false },
      dtsRollup: { enabled: true, untrimmedFilePath: join(typesDir, entry.rollup) },
      messages: {
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
        // A type reachable from the surface but not exported is written into the report, where
        // review sees it.
        extractorMessageReporting: {
          default: { logLevel: report ? ExtractorLogLevel.Warning : ExtractorLogLevel.None, addToApiReportFile: true },
          // No @public/@beta tags: everything exported is public. Undocumented members are
          // marked `(undocumented)` in the report already.
          'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
          'ae-undocumented': { logLevel: ExtractorLogLevel.None },
          'ae-unresolved-link': { logLevel: ExtractorLogLevel.None },
        },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
      },
    },
  });
  return Extractor.invoke(config, {
    localBuild: update,
    // A changed surface prints its diff, so CI's log shows it.
    printApiReportDiff: !update,
    // Not the notes on api-extractor's own TypeScript (6.x) beside the repository's (5.9).
    messageCallback: (message) => {
      if (QUIET.has(message.messageId)) message.handled = true;
    },
  }).succeeded;
}
