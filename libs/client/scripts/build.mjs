// npm run build (and prepack): dist/ as published. One CommonJS file per entry (`.` and `./nest`)
// plus the chunks they share, so both entries hold the same classes; @sluice/core and
// @sluice/protocol bundled in; one .d.ts rollup per entry.
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import * as esbuild from 'esbuild';
import { ENTRIES, PACKAGE_DIR, extract, withDeclarations } from './declarations.mjs';

const DIST = join(PACKAGE_DIR, 'dist');
/** What the output may import: Node's built-ins, and the optional peers, from `./nest` only. */
const PEERS = ['@nestjs/common', '@nestjs/core', 'rxjs'];

rmSync(DIST, { recursive: true, force: true });

// esbuild splits shared code into chunks only for ESM: bundle as ESM, then turn every output file
// into CommonJS. Node's ESM loader reads the named exports of that CommonJS (esbuild writes the
// `0 && (module.exports = { … })` hint cjs-module-lexer looks for), so there is one copy of the
// package whether it is required or imported.
const bundle = await esbuild.build({
  absWorkingDir: PACKAGE_DIR,
  entryPoints: { index: 'src/index.ts', 'nest/index': 'src/nest/index.ts' },
  tsconfig: join(PACKAGE_DIR, '../../tsconfig.json'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external: PEERS,
  chunkNames: 'chunks/[name]-[hash]',
  outdir: DIST,
  metafile: true,
  write: false,
  legalComments: 'none',
});

for (const [path, output] of Object.entries(bundle.metafile.outputs)) {
  const name = relative(PACKAGE_DIR, path);
  for (const { path: imported, external } of output.imports) {
    if (!external) continue;
    const allowed = imported.startsWith('node:')
      ? builtinModules.includes(imported.slice(5))
      : PEERS.includes(imported) && name.startsWith('dist/nest/');
    if (!allowed) throw new Error(`${name} imports ${imported}: only node: built-ins (and Nest peers in nest/)`);
  }
}
for (const file of bundle.outputFiles) {
  const { code } = await esbuild.transform(file.text, { format: 'cjs', platform: 'node', target: 'node22' });
  mkdirSync(dirname(file.path), { recursive: true });
  writeFileSync(file.path, code);
}

withDeclarations((typesDir) => {
  for (const entry of ENTRIES) {
    if (!extract(entry, typesDir)) throw new Error(`api-extractor failed on ${entry.name}`);
    copyFileSync(join(typesDir, entry.rollup), join(DIST, entry.dist));
  }
});
console.log(`built ${relative(process.cwd(), DIST) || '.'}`);
