import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { findFreePorts } from '../support/ports';
import { waitUntil } from '../support/time';

jest.setTimeout(90_000);

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');

// A coordinator booted while its Redis is not there yet: a few JSON lines that say what it waits
// for, then quiet, not a line per reconnect attempt (ioredis tries every 500 ms or so).
it('booted against a closed Redis port, it says what it waits for in a few JSON lines, then stays quiet', async () => {
  const [port, closedRedisPort] = await findFreePorts(2);
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      SLUICE_PORT: String(port),
      SLUICE_REDIS_URL: `redis://127.0.0.1:${closedRedisPort}`,
    },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await waitUntil(
      () => output.includes('"msg":"listening on http://127.0.0.1:'),
      60_000,
      () => `never listened: ${output}`,
    );
    const atListen = output.split('\n').filter(Boolean).length;
    // Ten seconds of reconnect attempts (about twenty of them) after it listens.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const lines = output.split('\n').filter(Boolean);
    const records = lines.map((line) => {
      try {
        return JSON.parse(line) as { msg: string };
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
    expect(lines.length).toBeLessThanOrEqual(10);
    expect(lines.length).toBe(atListen); // nothing more while it keeps trying
    const waiting = records.filter((record) => record.msg.includes('Redis'));
    expect(waiting.map((record) => record.msg)).toEqual([
      expect.stringMatching(/^state in Redis at redis:\/\/127\.0\.0\.1:\d+$/),
      expect.stringMatching(
        /^waiting for Redis at redis:\/\/127\.0\.0\.1:\d+ \(connect ECONNREFUSED [^)]+\): decisions answer 503 store_unavailable/,
      ),
      expect.stringMatching(
        /^Redis was not ready within \d+ ms: answering 503 store_unavailable until it is reachable$/,
      ),
    ]);
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  }
});
