import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The built CLI (`npm run build`), as the `sluice` bin of the package runs it; SLUICE_CLI names
 * another build of it (a copy of dist/ that a concurrent build cannot remove mid-run).
 */
export const SLUICE_CLI = process.env.SLUICE_CLI ?? join(__dirname, '../../dist/apps/cli/src/main.js');

export interface SluiceRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a run: the coordinator and the token, as an operator's shell sets them. */
export interface SluiceEnv {
  url: string;
  token?: string;
}

const childEnv = ({ url, token }: SluiceEnv): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, SLUICE_URL: url };
  if (token !== undefined) env.SLUICE_TOKEN = token;
  return env;
};

function assertBuilt(): void {
  if (!existsSync(SLUICE_CLI)) throw new Error(`${SLUICE_CLI} is missing: run npm run build first`);
}

/** Runs `sluice …args` to its end (stdin not a terminal); answers its exit code and output. */
export function runSluice(env: SluiceEnv, args: string[], input?: string): Promise<SluiceRun> {
  assertBuilt();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [SLUICE_CLI, ...args],
      { env: childEnv(env), timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input ?? '');
  });
}

/** A long-running `sluice` (watch): its output lines as they come, and a way to stop it. */
export interface RunningSluice {
  child: ChildProcess;
  lines: string[];
  stderr(): string;
  /** Resolves with the first line (already printed or still to come) that matches, or rejects after `timeoutMs`. */
  nextLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Sends `signal` and answers the exit code (128 + n when killed by it unhandled). */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export function startSluice(env: SluiceEnv, args: string[]): RunningSluice {
  assertBuilt();
  const child = spawn(process.execPath, [SLUICE_CLI, ...args], {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let pending = '';
  let errors = '';
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
    waiters.forEach((wake) => wake());
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15))),
  );
  return {
    child,
    lines,
    stderr: () => errors,
    nextLine(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found === undefined) return;
          done();
          resolve(found);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching line within ${timeoutMs} ms; got ${JSON.stringify(lines)}; stderr ${errors}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(signal = 'SIGINT') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
