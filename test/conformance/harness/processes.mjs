// The private Redis and the built coordinators the suite runs against, as child processes on
// spare loopback ports, stopped by their own PIDs. (The same ideas as test/support/redis-server.ts,
// ports.ts and coordinator-process.ts, for a plain Node program.)
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where available, the kernel kills the child as soon as the harness dies. */
const LAUNCH = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL'] : [];

/** Every child still running, killed when the harness exits. */
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
// Interrupted or stopped: exit, so that the handler above runs.
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

/** `n` distinct ports of 127.0.0.1 that were free a moment ago. */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      servers.push(
        await new Promise((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
      );
    }
    return servers.map((server) => server.address().port);
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** Polls `check` until it is true; throws `message()` after `timeoutMs`. */
export async function waitUntil(check, timeoutMs, message, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`${message()} (waited ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function launch(argv, env) {
  const [command, ...args] = [...LAUNCH, ...argv];
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-8000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  live.add(child);
  const exited = new Promise((resolve) => child.once('close', resolve));
  exited.then(() => live.delete(child));
  return {
    child,
    output: () => output,
    exited,
    /** SIGKILL by PID, and wait until it is gone. */
    async kill() {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
      await exited;
    },
  };
}

/** A private redis-server (no persistence) on a spare port. */
export async function startRedis() {
  const [port] = await freePorts(1);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-conformance-redis-'));
  const server = launch(
    ['redis-server', '--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    { PATH: process.env.PATH },
  );
  await waitUntil(
    () =>
      new Promise((resolve) =>
        execFile('redis-cli', ['-p', String(port), 'INFO', 'server'], { timeout: 2000 }, (error, stdout) =>
          resolve(!error && new RegExp(`process_id:${server.child.pid}\\b`).test(stdout)),
        ),
      ),
    10_000,
    () => `redis-server on port ${port} did not answer:\n${server.output()}`,
  );
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The built coordinator on `port`, once it is ready. */
export async function startCoordinator(main, port, env) {
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
  const coordinator = launch([process.execPath, main], {
    PATH: process.env.PATH,
    SLUICE_PORT: String(port),
    SLUICE_HOST: '127.0.0.1',
    SLUICE_LOG_LEVEL: 'warn',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(
      async () => {
        if (coordinator.child.exitCode !== null) throw new Error(`the coordinator exited:\n${coordinator.output()}`);
        return (await fetch(`${url}/health/ready`).catch(() => undefined))?.status === 200;
      },
      30_000,
      () => `the coordinator on port ${port} never became ready:\n${coordinator.output()}`,
      100,
    );
  } catch (error) {
    await coordinator.kill();
    throw error;
  }
  return { ...coordinator, url, port, pid: coordinator.child.pid };
}
