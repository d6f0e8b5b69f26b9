import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import request from 'supertest';
import { ADMIN_TOKEN, bearer } from '../support/coordinator';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

/**
 * The `sluice` CLI as an operator installs it: `npm pack` of apps/cli, `npm install -g` of the
 * tarball into a scratch prefix, and the installed `sluice` run with a PATH that holds that prefix's
 * bin and Node, nothing of this repository.
 */
const PACKAGE_DIR = join(__dirname, '../../apps/cli');
const MINUTE = 60_000;
jest.setTimeout(5 * MINUTE);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function exec(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve) =>
    execFile(command, args, { ...options, timeout: 3 * MINUTE }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    ),
  );
}

/** The environment without npm's own variables (npm test sets them for this repository). */
const npmEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

describe('the packed sluice CLI, installed globally into a scratch prefix', () => {
  let coordinator: TestCoordinator;
  let work: string;
  let bin: string;
  const sluice = (...args: string[]) =>
    exec(join(bin, 'sluice'), args, {
      cwd: work,
      env: {
        // The scratch prefix's bin and the directory of the node running this test: nothing else.
        PATH: `${bin}:${dirname(process.execPath)}`,
        SLUICE_URL: coordinator.url,
        SLUICE_TOKEN: ADMIN_TOKEN.secret,
      },
    });

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: true,
      listen: true,
      label: 'packed-cli',
      config: { tokens: [ADMIN_TOKEN] },
    });
    work = mkdtempSync(join(tmpdir(), 'sluice-packed-cli-'));
    const packed = await exec('npm', ['pack', '--pack-destination', work], { cwd: PACKAGE_DIR, env: npmEnv() });
    expect(packed.code).toBe(0);
    const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack wrote no tarball: ${packed.stderr}`);
    const prefix = join(work, 'prefix');
    const installed = await exec(
      'npm',
      ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(work, tarball)],
      { cwd: work, env: npmEnv() },
    );
    expect({ code: installed.code, stderr: installed.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    bin = join(prefix, 'bin');
    expect(existsSync(join(bin, 'sluice'))).toBe(true);
    // An open breaker for `deps --open` to find: failures past the default policy's thresholds.
    await request(coordinator.server)
      .post('/v1/shop/reports')
      .set(bearer(ADMIN_TOKEN))
      .send({ reporter: 'pod-a', deps: [{ dep: 'inventory', requests: 40, successes: 0, failures: 40, slow: 0 }] })
      .expect(200);
  });
  afterAll(async () => {
    await coordinator?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('lists what is open, trips a breaker for the fleet and shows it, with nothing else installed', async () => {
    const open = await sluice('deps', '--open');
    expect({ code: open.code, stderr: open.stderr }).toEqual({ code: 0, stderr: '' });
    expect(open.stdout).toMatch(/^NAMESPACE\s+DEPENDENCY\s+BREAKER/);
    expect(open.stdout).toMatch(/\nshop\s+inventory\s+open\s/);

    const trip = await sluice('trip', 'shop', 'inventory', '--reason', 'bad deploy 4812', '--for', '30m');
    expect({ code: trip.code, stderr: trip.stderr }).toEqual({ code: 0, stderr: '' });
    expect(trip.stdout).toMatch(/breaker\s+forced_open/);
    expect(trip.stdout).toMatch(/reason\s+bad deploy 4812/);

    const json = await sluice('deps', 'shop', '--open', '--output', 'json');
    expect(json.code).toBe(0);
    const items = (JSON.parse(json.stdout) as { items: Array<{ dependency: string; state: string; reason: string }> })
      .items;
    expect(items).toContainEqual(
      expect.objectContaining({ dependency: 'inventory', state: 'forced_open', reason: 'bad deploy 4812' }),
    );
  });
});
