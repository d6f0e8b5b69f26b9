import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';
import { waitUntil } from '../support/time';
import { metric } from '../support/sdk';

/**
 * `@sluice/client` as a user gets it: `npm pack` of libs/client, installed into a scratch project
 * under the OS's temp directory that holds nothing else of this repository, with what that project
 * needs from the npm registry (TypeScript, Nest). The scratch project's files are in ./scratch.
 */
const PACKAGE_DIR = join(__dirname, '../../libs/client');
/** Prints the supported Node.js lines, or a binary of one (installed once into .ci/.node/<line>). */
const NODE_LINE = join(__dirname, '../../.ci/node-line');
const SCRATCH_FILES = join(__dirname, 'scratch');
const INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund'];
/** What the scratch project itself installs from the registry, beside the tarball. */
const SCRATCH_DEPENDENCIES = [
  'typescript@~5.9',
  '@types/node@^22',
  '@nestjs/common@^12',
  '@nestjs/core@^12',
  '@nestjs/platform-fastify@^12',
  'reflect-metadata@^0.2',
  'rxjs@^7',
];
/** What the packed JavaScript may require: Node's built-ins, and the optional Nest peers. */
const NEST_PEERS = ['@nestjs/common', '@nestjs/core', 'rxjs'];
const MINUTE = 60_000;
// npm installs and a strict tsc over Nest's declarations take minutes on a loaded machine.
jest.setTimeout(5 * MINUTE);

/** The environment without npm's own variables (npm test sets them for this repository). */
const cleanEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_'))),
  ...extra,
});

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      command,
      args,
      { cwd, env: cleanEnv(env), maxBuffer: 32 * 1024 * 1024, timeout: 5 * MINUTE },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${command} ${args.join(' ')} in ${cwd}: ${error.message}\n${stdout}\n${stderr}`))
          : resolve(stdout),
    ),
  );
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

/** The last line a script printed, as JSON. */
const lastJson = (output: string): Record<string, unknown> => JSON.parse(output.trim().split('\n').pop() ?? '');

describe('the packed @sluice/client, installed into a fresh project', () => {
  let work: string;
  let scratch: string;
  let tarball: string;
  /** A binary of every supported Node.js line but this process's, by version. */
  let otherLines: Array<{ node: string; version: string }>;
  let coordinator: CoordinatorProcess;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'sluice-packed-client-'));
    await run('npm', ['pack', '--pack-destination', work], PACKAGE_DIR);
    tarball = join(work, readdirSync(work).find((name) => name.endsWith('.tgz')) ?? 'no tarball was written');

    scratch = join(work, 'app');
    mkdirSync(scratch);
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'packed-client-scratch', private: true }));
    for (const name of readdirSync(SCRATCH_FILES)) copyFileSync(join(SCRATCH_FILES, name), join(scratch, name));
    await run('npm', [...INSTALL, tarball, ...SCRATCH_DEPENDENCIES], scratch);

    const lines = (await run('bash', [NODE_LINE], scratch)).trim().split(' ');
    otherLines = [];
    for (const line of lines.filter((line) => line !== process.versions.node.split('.')[0])) {
      const node = (await run('bash', [NODE_LINE, line], scratch)).trim();
      otherLines.push({ node, version: (await run(node, ['--version'], scratch)).trim() });
    }
    expect(otherLines.length).toBe(lines.length - 1);

    coordinator = await startCoordinatorProcess(await findFreePort());
  }, 15 * MINUTE);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await coordinator?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds its licence, the bundled CommonJS and one .d.ts per entry, and depends on nothing', async () => {
    const installed = join(scratch, 'node_modules/@sluice/client');
    const files = filesUnder(installed);
    console.log(
      `${relative(work, tarball)}: ${statSync(tarball).size} bytes\n${files.map((f) => `  ${f} ${statSync(join(installed, f)).size}`).join('\n')}`,
    );
    expect(files.filter((file) => !file.startsWith('dist/chunks/'))).toEqual([
      'LICENSE',
      'README.md',
      'dist/index.d.ts',
      'dist/index.js',
      'dist/nest/index.d.ts',
      'dist/nest/index.js',
      'package.json',
    ]);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.engines).toEqual({ node: '>=22' });

    // Every require of the JavaScript is a Node built-in, a file of the package, or (from nest/) a Nest peer.
    for (const file of files.filter((name) => name.endsWith('.js'))) {
      const required = [...readFileSync(join(installed, file), 'utf8').matchAll(/require\("([^"]+)"\)/g)].map(
        (m) => m[1],
      );
      for (const name of required) {
        const allowed =
          name.startsWith('.') ||
          (name.startsWith('node:') && builtinModules.includes(name.slice(5))) ||
          (file.startsWith('dist/nest/') && NEST_PEERS.includes(name));
        expect({ file, requires: name, allowed }).toEqual({ file, requires: name, allowed: true });
      }
    }
    // @sluice/core and @sluice/protocol are bundled in, their types too.
    for (const file of files)
      expect(readFileSync(join(installed, file), 'utf8')).not.toMatch(/@sluice\/(core|protocol)['"]/);
  });

  it('is the same package to require and to import, with the same classes in @sluice/client/nest', async () => {
    const seen = lastJson(await run(process.execPath, ['entries.mjs'], scratch));
    expect(seen.required).toEqual(expect.arrayContaining(['Sluice', 'CoordinatorClient', 'isGiveUpError']));
    expect(seen.imported).toEqual(seen.required);
    expect(seen.requiredNest).toEqual(expect.arrayContaining(['SluiceModule', 'IdempotencyModule', 'Idempotent']));
    expect(seen.importedNest).toEqual(seen.requiredNest);
    expect(seen.sameSluice).toBe(true);
  });

  it.each(['nodenext', 'node10'])('type-checks a usage file under a strict tsc, moduleResolution %s', async (mode) => {
    await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', `tsconfig.${mode}.json`], scratch);
  });

  it('makes one real call through the coordinator, required and imported, on every supported Node line', async () => {
    const granted = () =>
      metric(coordinator.url, 'sluice_retry_decisions_total', {
        namespace: 'packed',
        dependency: 'inventory',
        result: 'granted',
      });
    const before = await granted();
    const nodes = [{ node: process.execPath, version: process.version }, ...otherLines];
    const runs = nodes.flatMap(({ node, version }) =>
      ['smoke.cjs', 'smoke.mjs'].map((script) => ({ node, version, script })),
    );
    for (const { node, version, script } of runs) {
      const printed = lastJson(await run(node, [script], scratch, { SLUICE_URL: coordinator.url }));
      expect(printed).toEqual({
        loader: script.endsWith('.mjs') ? 'import' : 'require',
        node: version,
        answer: 'answered on attempt 2',
        retries: [2],
      });
    }
    // Each second attempt went out on the coordinator's grant.
    expect((await granted()) - before).toBe(runs.length);
  });

  it('serves a Nest app whose @Idempotent() route replays the stored response', async () => {
    await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.app.json'], scratch);
    const port = await findFreePort();
    const app = spawn(process.execPath, ['out/app.js'], {
      cwd: scratch,
      env: cleanEnv({ SLUICE_URL: coordinator.url, PORT: String(port) }),
      stdio: 'pipe',
    });
    children.push(app);
    let output = '';
    app.stdout.on('data', (chunk) => (output += chunk));
    app.stderr.on('data', (chunk) => (output += chunk));
    await waitUntil(
      () => output.includes('listening') || app.exitCode !== null,
      30_000,
      () => `the Nest app never listened:\n${output}`,
    );
    expect(output).toContain('listening');

    const order = (key: string) =>
      fetch(`http://127.0.0.1:${port}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ sku: 'sku-1' }),
      });
    const first = await order('order-1');
    const firstBody = await first.text();
    expect({ status: first.status, body: JSON.parse(firstBody) }).toEqual({
      status: 201,
      body: { order: 1, sku: 'sku-1', sluice: true },
    });
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const again = await order('order-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);

    // Another key runs the handler again.
    expect(await (await order('order-2')).json()).toEqual({ order: 2, sku: 'sku-1', sluice: true });
    app.kill('SIGTERM');
    await new Promise((resolve) => (app.exitCode === null ? app.once('exit', resolve) : resolve(undefined)));
    expect(output).not.toMatch(/error/i);
  });
});
