import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { findFreePort } from './ports';
import { waitUntil } from './time';

export interface RedisServerOptions {
  /** Port to listen on; by default a free one is picked on the first `start()` and kept. */
  port?: number;
  /** Extra config directives, passed as `--name value` (e.g. `{ 'cluster-enabled': 'yes' }`). */
  config?: Record<string, string>;
  /** How long `start()` waits for the server to answer. */
  startTimeoutMs?: number;
}

const DEFAULT_START_TIMEOUT_MS = 10_000;
/** `stop()` escalates to SIGKILL when SIGTERM has not ended the server by then. */
const STOP_GRACE_MS = 5_000;
/** Last bytes of server output kept for error messages. */
const OUTPUT_TAIL = 4_000;

/** Runs `redis-cli -h 127.0.0.1 -p <port> <args>` and resolves with its stdout; rejects when it fails. */
export function redisCli(port: number, args: string[], timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: timeoutMs }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
}

// Every server that may still own a process or a temp dir. Jest gives each test file its own
// module registry, so this set (and the afterAll below) is per test file.
const live = new Set<RedisServerProcess>();
// Jest hands test code a copy of `process` whose 'exit' never fires; this is the real one.
const realProcess = runInThisContext('process') as NodeJS.Process;
const onExit = (): void => live.forEach((server) => server.cleanupSync());

function track(server: RedisServerProcess): void {
  if (live.size === 0) realProcess.on('exit', onExit);
  live.add(server);
}

function untrack(server: RedisServerProcess): void {
  if (live.delete(server) && live.size === 0) realProcess.off('exit', onExit);
}

/** Stops and removes every server started from this module instance (i.e. from this test file). */
export async function cleanupAllRedisServers(): Promise<void> {
  await Promise.all([...live].map((server) => server.cleanup()));
}

// Safety net for test files that forget `cleanup()` or fail half-way. It runs before the test
// file's own afterAll hooks (hooks run in definition order), so those must tolerate a server
// that is already gone (ioredis `quit()` and `disconnect()` both do).
if (typeof afterAll === 'function') {
  try {
    afterAll(cleanupAllRedisServers);
  } catch {
    // Imported after tests started running (hooks can no longer be added): rely on 'exit'.
  }
}

// Where available, the kernel kills redis-server as soon as its parent dies, even if the test
// runner itself is SIGKILLed and no handler gets to run.
const LAUNCHER = existsSync('/usr/bin/setpriv')
  ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL', 'redis-server']
  : ['redis-server'];

/**
 * A private `redis-server` child process on 127.0.0.1 with persistence off and its own temp dir.
 * It can be stopped and started again on the same port, to simulate Redis going away and coming back.
 */
export class RedisServerProcess {
  private portNumber: number | undefined;
  private tempDir: string | undefined;
  private child: ChildProcess | undefined;
  private closed: Promise<void> | undefined;
  private output = '';
  /** Set while this object stops the server: any other exit is reported, with its output. */
  private stopping = false;

  constructor(private readonly options: RedisServerOptions = {}) {
    this.portNumber = options.port;
  }

  /** Creates a server and starts it. */
  static async start(options?: RedisServerOptions): Promise<RedisServerProcess> {
    const server = new RedisServerProcess(options);
    try {
      return await server.start();
    } catch (err) {
      await server.cleanup();
      throw err;
    }
  }

  get port(): number {
    if (this.portNumber === undefined) throw new Error('RedisServerProcess has no port before start()');
    return this.portNumber;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Working directory of the server (cluster config files live here). */
  get dir(): string {
    if (this.tempDir === undefined) throw new Error('RedisServerProcess has no dir before start()');
    return this.tempDir;
  }

  /** Process id of the running server (e.g. to SIGSTOP/SIGCONT it); undefined when not running. */
  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the server (again, on the same port) and waits until it answers. No-op when running. */
  async start(): Promise<this> {
    if (this.running) return this;
    await this.waitForExit();
    track(this);
    this.tempDir ??= mkdtempSync(join(tmpdir(), 'sluice-redis-'));
    const portWasPicked = this.portNumber === undefined;
    for (let attempt = 1; ; attempt++) {
      this.portNumber ??= await findFreePort();
      try {
        await this.launch();
        return this;
      } catch (err) {
        // A freshly picked port can be taken by someone else before redis binds it: pick another.
        const portTaken = this.output.includes('Address already in use');
        if (!portWasPicked || !portTaken || attempt >= 3) throw err;
        this.portNumber = undefined;
      }
    }
  }

  /** SIGSTOP: Redis stalls with its connections open, as a hung host does. */
  pause(): void {
    if (this.pid === undefined) throw new Error('the private redis-server is not running');
    process.kill(this.pid, 'SIGSTOP');
  }

  /** SIGCONT: a paused Redis answers again. Safe to call when it is not paused or not running. */
  resume(): void {
    try {
      if (this.pid !== undefined) process.kill(this.pid, 'SIGCONT');
    } catch {
      // already gone
    }
  }

  /** SIGTERM (graceful shutdown; SIGKILL after a grace period) and wait for exit. Idempotent. */
  stop(): Promise<void> {
    return this.terminate('SIGTERM');
  }

  /** SIGKILL (Redis vanishes abruptly) and wait for exit. Idempotent. */
  kill(): Promise<void> {
    return this.terminate('SIGKILL');
  }

  /** Kills the server and removes its temp dir. Idempotent. */
  async cleanup(): Promise<void> {
    await this.kill();
    this.removeDir();
    untrack(this);
  }

  /** Synchronous last-resort cleanup (for 'exit' handlers): SIGKILL without waiting, remove the dir. */
  cleanupSync(): void {
    this.stopping = true;
    if (this.running) this.child?.kill('SIGKILL');
    this.removeDir();
    untrack(this);
  }

  private async launch(): Promise<void> {
    const port = this.port;
    const config = {
      bind: '127.0.0.1',
      save: '', // no RDB snapshots
      appendonly: 'no',
      loglevel: 'warning', // keep startup errors (kept for error messages) easy to spot
      ...this.options.config,
      port: String(port),
      dir: this.dir,
    };
    const args = [...LAUNCHER.slice(1), ...Object.entries(config).flatMap(([name, value]) => [`--${name}`, value])];
    this.output = '';
    let spawnError: Error | undefined;
    const child = spawn(LAUNCHER[0], args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.stopping = false;
    this.closed = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        // A server that dies under a test fails it with "Connection is closed": say why it died.
        if (!this.stopping && code !== null && !this.output.includes('Address already in use'))
          process.stderr.write(
            `redis-server on port ${port} exited by itself (code ${code}); output:\n${this.output}\n`,
          );
        else if (!this.stopping && signal !== null)
          process.stderr.write(`redis-server on port ${port} was killed by ${signal} from outside its test\n`);
        resolve();
      });
      child.once('error', (err) => {
        spawnError = err;
        resolve();
      });
    });
    const keepTail = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keepTail);
    child.stderr?.on('data', keepTail);

    let answered = false;
    try {
      await waitUntil(
        async () => {
          if (spawnError || !this.running) return true; // stop polling; reported below
          // Ask for the pid, not just PING: if someone else holds the port, their server would answer.
          const info = await redisCli(port, ['INFO', 'server']).catch(() => '');
          answered = /process_id:(\d+)/.exec(info)?.[1] === String(child.pid);
          return answered;
        },
        this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
        () => `redis-server on port ${port} did not answer`,
      );
    } catch (err) {
      await this.kill();
      throw new Error(`${(err as Error).message}; output:\n${this.output}`);
    }
    if (!answered) {
      await this.waitForExit();
      const why = spawnError ? `could not be spawned: ${spawnError.message}` : 'exited during startup';
      throw new Error(`redis-server on port ${port} ${why}; output:\n${this.output}`);
    }
  }

  private async terminate(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (child && this.running) {
      this.stopping = true;
      child.kill(signal);
      if (signal === 'SIGTERM') {
        const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await this.waitForExit();
        clearTimeout(escalate);
      }
    }
    await this.waitForExit();
  }

  /** Waits until the current child (if any) has exited and its pipes are closed. */
  private async waitForExit(): Promise<void> {
    await this.closed;
    this.child = undefined;
    this.closed = undefined;
  }

  private removeDir(): void {
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
    this.tempDir = undefined;
  }
}
