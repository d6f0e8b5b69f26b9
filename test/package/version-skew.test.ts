import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sluice } from '@sluice/client';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';

/**
 * SDK and coordinator of different releases against each other: the previous release of the SDK
 * (0.1.0, kept as the tarball `npm pack` made of it) against this coordinator, and this SDK against
 * the previous release's coordinator, built from its commit. Either way a retry is decided by the
 * fleet, reports count, and an operator's trip fails the next call with the reason.
 */
const MINUTE = 60_000;
jest.setTimeout(6 * MINUTE);
const REPOSITORY = join(__dirname, '../..');
const PREVIOUS_SDK = join(__dirname, 'fixtures/sluice-client-0.1.0.tgz');
/** The commit of release 0.1.0: the coordinator before adaptive budgets. */
const PREVIOUS_RELEASE = '17af183';

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')),
  );
  return new Promise((resolve, reject) =>
    execFile(
      command,
      args,
      { cwd, env: { ...clean, ...env }, maxBuffer: 16 << 20, timeout: 4 * MINUTE },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stdout}\n${stderr}`))
          : resolve(stdout),
    ),
  );
}

/** A dependency that answers 503 to every second request of a path, 200 otherwise. */
async function flakyDependency(): Promise<{ server: Server; url: string }> {
  const seen = new Map<string, number>();
  const server = createServer((request, response) => {
    const count = (seen.get(request.url ?? '') ?? 0) + 1;
    seen.set(request.url ?? '', count);
    response.writeHead(count % 2 === 1 ? 503 : 200, { 'content-type': 'text/plain' }).end('x');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function budget(coordinatorUrl: string): Promise<Record<string, number>> {
  const view = (await (await fetch(`${coordinatorUrl}/v1/shop/deps/payments-api`)).json()) as {
    budget: Record<string, number>;
  };
  return view.budget;
}

async function trip(coordinatorUrl: string, reason: string): Promise<void> {
  const response = await fetch(`${coordinatorUrl}/admin/v1/shop/breakers/payments-api/trip`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ reason, durationSeconds: 600 }),
  });
  expect(response.status).toBe(200);
}

/** What a caller script does with an SDK: a call that needs one retry, then, after a trip, a call refused. */
const CALLER = `
const { Sluice, isBreakerOpenError } = require('@sluice/client');
const [coordinator, target] = process.argv.slice(2);
const sluice = new Sluice({ baseUrls: [coordinator], namespace: 'shop', logger: false, reportIntervalMs: 50, decisionTimeoutMs: 2000 });
const payments = sluice.dependency('payments-api');
const call = () => payments.execute(async () => {
  const response = await fetch(target + '/charge');
  if (!response.ok) throw Object.assign(new Error('status ' + response.status), { status: response.status });
  return response.status;
}, { idempotent: true });
(async () => {
  const first = await call();
  await sluice.flush();
  await new Promise((resolve) => setTimeout(resolve, 300));
  console.log(JSON.stringify({ first }));
  process.stdin.once('data', async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const refused = await call().then(() => null, (error) => ({ breakerOpen: isBreakerOpenError(error), reason: error.operatorReason }));
    console.log(JSON.stringify({ refused }));
    await sluice.close();
  });
})();
`;

describe('an SDK and a coordinator of different releases', () => {
  let work: string;
  let dependency: { server: Server; url: string };
  const coordinators: CoordinatorProcess[] = [];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'sluice-skew-'));
    dependency = await flakyDependency();
  });
  afterAll(async () => {
    await Promise.all(coordinators.map((coordinator) => coordinator.stop()));
    dependency?.server.closeAllConnections();
    await new Promise((resolve) => dependency?.server.close(resolve));
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the previous SDK (0.1.0) against this coordinator: its retries granted and counted, its reports taken, a trip refuses its next call', async () => {
    const app = join(work, 'old-sdk');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'skew', private: true }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', PREVIOUS_SDK], app);
    writeFileSync(join(app, 'caller.js'), CALLER);
    const coordinator = await startCoordinatorProcess(await findFreePort(), {}, 60_000);
    coordinators.push(coordinator);

    const child = execFile(process.execPath, ['caller.js', coordinator.url, dependency.url], { cwd: app });
    const lines: string[] = [];
    const next = () =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line from the caller: ${lines.join('\n')}`)), 60_000);
        child.stdout?.on('data', (chunk: Buffer) => {
          lines.push(...chunk.toString().split('\n').filter(Boolean));
          const line = lines.shift();
          if (line) {
            clearTimeout(timer);
            resolve(JSON.parse(line));
          }
        });
      });
    expect(await next()).toEqual({ first: 200 });
    // One retry granted and counted; the old SDK reports no successes, so the adaptive budget counts as a fixed one.
    expect(await budget(coordinator.url)).toMatchObject({ retries: 1, retriesSucceeded: 0, requests: 1 });
    await trip(coordinator.url, 'skew check');
    const refused = next();
    child.stdin?.write('go\n');
    expect(await refused).toEqual({ refused: { breakerOpen: true, reason: 'skew check' } });
    child.stdin?.end();
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  });

  it('this SDK against the previous coordinator: reports still count once it refuses retriesSucceeded', async () => {
    // The previous release's coordinator, built from its commit with this checkout's dependencies.
    const old = join(work, 'old-coordinator');
    mkdirSync(old);
    await run(
      'sh',
      [
        '-c',
        `git -C "${REPOSITORY}" archive ${PREVIOUS_RELEASE} apps libs nest-cli.json tsconfig.json .swcrc package.json | tar -x -C "${old}"`,
      ],
      work,
    );
    symlinkSync(join(REPOSITORY, 'node_modules'), join(old, 'node_modules'));
    await run(join(REPOSITORY, 'node_modules/.bin/nest'), ['build'], old);
    const previousMain = process.env.SLUICE_TEST_COORDINATOR_MAIN;
    process.env.SLUICE_TEST_COORDINATOR_MAIN = join(old, 'dist/apps/coordinator/src/main.js');
    let coordinator: CoordinatorProcess;
    try {
      coordinator = await startCoordinatorProcess(await findFreePort(), {}, 60_000);
    } finally {
      if (previousMain === undefined) delete process.env.SLUICE_TEST_COORDINATOR_MAIN;
      else process.env.SLUICE_TEST_COORDINATOR_MAIN = previousMain;
    }
    coordinators.push(coordinator);
    // The previous coordinator's budget has no successes nor cap: it is the one before adaptive budgets.
    expect(await budget(coordinator.url)).not.toHaveProperty('retriesSucceeded');

    const sluice = new Sluice({
      baseUrls: [coordinator.url],
      namespace: 'shop',
      logger: false,
      reportIntervalMs: 60_000,
      decisionTimeoutMs: 2000, // room for a loaded machine: a late decision would fall back
    });
    try {
      const payments = sluice.dependency('payments-api');
      const call = () =>
        payments.execute(
          async () => {
            const response = await fetch(`${dependency.url}/skew-new`);
            if (!response.ok) throw Object.assign(new Error(`status ${response.status}`), { status: response.status });
            return response.status;
          },
          { idempotent: true },
        );
      // A 503, a granted retry, a 200: the report carries one retry that succeeded, which this
      // coordinator refuses; the report goes again without it, and its first attempt counts.
      expect(await call()).toBe(200);
      await sluice.flush();
      expect(await budget(coordinator.url)).toMatchObject({ retries: 1, requests: 1 });
      expect(await call()).toBe(200); // the next path's count: 503 then 200 again
      await sluice.flush();
      expect(await budget(coordinator.url)).toMatchObject({ retries: 2, requests: 2 });

      await trip(coordinator.url, 'skew check, previous coordinator');
      await new Promise((resolve) => setTimeout(resolve, 500));
      await expect(call()).rejects.toMatchObject({
        isBreakerOpenError: true,
        operatorReason: 'skew check, previous coordinator',
      });
    } finally {
      await sluice.close();
    }
  });
});
