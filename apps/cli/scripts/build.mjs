// npm run build (and prepack): dist/sluice.js, the whole CLI in one file with commander and the
// repository's own libs bundled in, so `npm install -g` of the packed tarball needs nothing else.
import { chmodSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(PACKAGE_DIR, 'dist');
const OUT = join(DIST, 'sluice.js');

rmSync(DIST, { recursive: true, force: true });
const bundle = await esbuild.build({
  absWorkingDir: PACKAGE_DIR,
  entryPoints: ['src/main.ts'],
  tsconfig: join(PACKAGE_DIR, '../../tsconfig.json'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  outfile: OUT,
  metafile: true,
  legalComments: 'none',
});
for (const { path, external } of Object.values(bundle.metafile.outputs).flatMap((output) => output.imports)) {
  if (
    external &&
    !(path.startsWith('node:') ? builtinModules.includes(path.slice(5)) : builtinModules.includes(path))
  ) {
    throw new Error(`the CLI bundle imports ${path}: only Node's built-ins may stay outside it`);
  }
}
chmodSync(OUT, 0o755);
console.log(`built ${relative(process.cwd(), OUT)}`);
