import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { waitUntil } from './time';

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');
/** The entry point started: SLUICE_TEST_COORDINATOR_MAIN (a private copy of the build) when set. */
const main = () => process.env.SLUICE_TEST_COORDINATOR_MAIN ?? MAIN;

export interface CoordinatorProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
  /** SIGKILL: no shutdown hooks, connections cut. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The built coordinator (npm run build) as a child process on `port`, ready to answer within
 * `readyTimeoutMs` (a minute by default: on a loaded two-core machine a boot has taken 30 s).
 */
export async function startCoordinatorProcess(
  port: number,
  env: NodeJS.ProcessEnv = {},
  readyTimeoutMs = 60_000,
): Promise<CoordinatorProcess> {
  if (!existsSync(main())) throw new Error(`${main()} is missing: run npm run build first (npm test does)`);
  const child = spawn(process.execPath, [main()], {
    env: { PATH: process.env.PATH, SLUICE_PORT: String(port), SLUICE_LOG_LEVEL: 'warn', ...env },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const started: CoordinatorProcess = {
    child,
    url,
    output: () => output,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  try {
    await waitUntil(
      async () => (await fetch(`${url}/health/ready`).catch(() => undefined))?.status === 200,
      readyTimeoutMs,
      () => `the coordinator never became ready:\n${output}`,
    );
  } catch (error) {
    await started.kill();
    throw error;
  }
  return started;
}
