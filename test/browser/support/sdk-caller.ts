import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitUntil } from '../../support/time';

const SCRIPT = join(__dirname, 'calling-service.mjs');

/** What one call of the SDK process ended with. */
export interface CallOutcome {
  ok: boolean;
  error?: { name: string; message: string; isBreakerOpenError: boolean; state?: string; operatorReason?: string };
}

/** The service process of support/calling-service.mjs: it calls `dependency` through the built SDK, again and again. */
export class SdkCaller {
  readonly calls: CallOutcome[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private output = '';

  constructor(coordinatorUrl: string, token: string, namespace: string, dependency: string) {
    this.child = spawn(process.execPath, [SCRIPT, coordinatorUrl, token, namespace, dependency], { stdio: 'pipe' });
    this.exited = new Promise((resolve) => this.child.on('exit', () => resolve()));
    let buffer = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        const event = JSON.parse(line) as { event: string } & CallOutcome;
        if (event.event === 'call') this.calls.push({ ok: event.ok, error: event.error });
      }
    });
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  /** The first call, from the `from`-th on, that `match` accepts. */
  async nextCall(from: number, match: (call: CallOutcome) => boolean, timeoutMs = 10_000): Promise<CallOutcome> {
    let found: CallOutcome | undefined;
    await waitUntil(
      () => (found = this.calls.slice(from).find(match)) !== undefined,
      timeoutMs,
      () => `no such call among ${this.calls.length - from}: ${JSON.stringify(this.calls.slice(-3))}\n${this.output}`,
    );
    return found as CallOutcome;
  }

  async stop(): Promise<void> {
    this.child.stdin?.end();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}
