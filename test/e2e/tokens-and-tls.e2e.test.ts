import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort, findFreePorts } from '../support/ports';
import { waitUntil } from '../support/time';
import { runSluice } from '../support/sluice-cli';

jest.setTimeout(120_000);

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');
const OLD = 'old-admin-secret-0123456789';
const NEW = 'new-admin-secret-0123456789';
const THIRD = 'third-admin-secret-012345678';
const tokens = (secret: string) => JSON.stringify([{ id: 'ops', secret, role: 'admin', namespaces: ['*'] }]);
const sha256 = (secret: string) => `sha256:${createHash('sha256').update(secret).digest('hex')}`;

async function status(url: string, secret: string): Promise<number> {
  const response = await fetch(`${url}/admin/v1/namespaces`, { headers: { authorization: `Bearer ${secret}` } });
  await response.arrayBuffer();
  return response.status;
}

describe('the tokens file, reloaded without a restart', () => {
  let dir: string;
  let file: string;
  let fleet: CoordinatorProcess[] = [];

  /** Replaces the file as a deploy tool does: a new file renamed over the old one. */
  const rotate = (content: string) => {
    const next = `${file}.next`;
    writeFileSync(next, content);
    renameSync(next, file);
  };
  const everyInstance = async (secret: string) => Promise.all(fleet.map((instance) => status(instance.url, secret)));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tokens-'));
    file = join(dir, 'tokens.json');
    writeFileSync(file, tokens(OLD));
    const ports = await findFreePorts(2);
    fleet = await Promise.all(
      ports.map((port) =>
        startCoordinatorProcess(port, { SLUICE_TOKENS_FILE: file, SLUICE_LOG_LEVEL: 'info' }, 60_000),
      ),
    );
  });
  afterAll(async () => {
    await Promise.all(fleet.map((instance) => instance.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a rotated secret: the old one refused and the new one accepted by every instance, without a restart', async () => {
    expect(await everyInstance(OLD)).toEqual([200, 200]);
    expect(await everyInstance(NEW)).toEqual([401, 401]);
    const since = Date.now();
    // Stored as its digest, as `sluice token hash` prints it.
    const hashed = await runSluice({ url: fleet[0].url }, ['token', 'hash'], `${NEW}\n`);
    expect({ code: hashed.code, stdout: hashed.stdout }).toEqual({ code: 0, stdout: `${sha256(NEW)}\n` });
    rotate(tokens(hashed.stdout.trim()));
    await waitUntil(
      async () => (await everyInstance(NEW)).every((code) => code === 200),
      // The file's stat is polled every 250 ms; the bound leaves room for a loaded machine.
      5_000,
      () => 'the new secret was not accepted by every instance within 5 s',
      25,
    );
    if (process.env.SLUICE_SHOW_TIMINGS) process.stderr.write(`rotation took effect in ${Date.now() - since} ms\n`);
    expect(await everyInstance(OLD)).toEqual([401, 401]);
    expect(await everyInstance(sha256(NEW))).toEqual([401, 401]); // the digest is not a secret
    for (const instance of fleet) expect(instance.output()).toMatch(/file changed: reloaded 1 tokens from .*\(ops\)/);
  });

  it('a bad file keeps the tokens in use and says why', async () => {
    rotate('[{"id": "ops", "secret": "short", "role": "admin", "namespaces": ["*"]}]');
    await waitUntil(
      async () =>
        fleet.every((instance) => /was not loaded: .*secret must be at least 16 characters/.test(instance.output())),
      5_000,
      () => `no instance said why it kept its tokens: ${fleet.map((instance) => instance.output()).join('\n')}`,
    );
    expect(await everyInstance(NEW)).toEqual([200, 200]);
    rotate('[]');
    await waitUntil(
      async () => fleet.every((instance) => /would turn authentication off/.test(instance.output())),
      5_000,
      () => 'an empty token list was not refused',
    );
    expect(await everyInstance(NEW)).toEqual([200, 200]);
    expect(await everyInstance('')).toEqual([401, 401]);
  });

  it('SIGHUP reloads a file whose change the watch cannot see', async () => {
    // Same size, same inode, same modification time: only the signal tells the instances.
    rotate(tokens(NEW));
    await waitUntil(
      async () => (await everyInstance(NEW)).every((code) => code === 200),
      5_000,
      () => 'not reloaded',
    );
    // A whole-second modification time, set again after the write, reads back exactly.
    const mtime = Math.floor(Date.now() / 1000) - 10;
    utimesSync(file, mtime, mtime);
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past the poll's last look
    // The write and the reset of its modification time are two calls: a poll that falls between
    // them sees the change, and that try proves nothing. Another secret of the same length is
    // then written the same way, once every instance has looked again.
    let third = '';
    for (let attempt = 1; ; attempt++) {
      third = `${THIRD.slice(0, NEW.length - 1)}${attempt}`;
      const before = statSync(file);
      writeFileSync(file, tokens(third));
      utimesSync(file, mtime, mtime);
      expect(statSync(file)).toMatchObject({ size: before.size, ino: before.ino, mtimeMs: before.mtimeMs });
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const seen = await everyInstance(third);
      if (seen.every((code) => code === 401)) break;
      if (attempt === 5) throw new Error(`a poll saw each of 5 writes between the write and the reset: ${seen}`);
    }
    for (const instance of fleet) instance.child.kill('SIGHUP');
    await waitUntil(
      async () => (await everyInstance(third)).every((code) => code === 200),
      2_000,
      () => 'SIGHUP did not reload',
    );
    expect(await everyInstance(NEW)).toEqual([401, 401]);
  });
});

describe('TLS', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const get = (port: number, path: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const request = httpsRequest(
        { host: '127.0.0.1', port, path, ca: readFileSync(join(dir, 'cert.pem')), timeout: 5_000 },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        },
      );
      request.on('error', reject);
      request.end();
    });

  it('serves HTTPS with the configured certificate, and nothing in plain HTTP', async () => {
    const port = await findFreePort();
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH,
        SLUICE_PORT: String(port),
        SLUICE_TLS_CERT_FILE: join(dir, 'cert.pem'),
        SLUICE_TLS_KEY_FILE: join(dir, 'key.pem'),
      },
      stdio: 'pipe',
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitUntil(
        async () => (await get(port, '/health/ready').catch(() => undefined))?.status === 200,
        30_000,
        () => `never ready over HTTPS: ${output}`,
      );
      expect(JSON.parse((await get(port, '/health/ready')).body)).toMatchObject({ status: 'ok' });
      expect(output).toContain(`listening on https://127.0.0.1:${port}`);
      await expect(fetch(`http://127.0.0.1:${port}/health/ready`)).rejects.toThrow();
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  });

  it('refuses to boot with a certificate and no key, or a file that is not PEM (exit 78)', () => {
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    for (const [env, said] of [
      [{ SLUICE_TLS_CERT_FILE: join(dir, 'cert.pem') }, 'SLUICE_TLS_KEY_FILE: is required with SLUICE_TLS_CERT_FILE'],
      [{ SLUICE_TLS_CERT_FILE: notPem, SLUICE_TLS_KEY_FILE: join(dir, 'key.pem') }, 'holds no PEM certificate'],
    ] as const) {
      let code = 0;
      let output = '';
      try {
        execFileSync(process.execPath, [MAIN], { env: { PATH: process.env.PATH, ...env }, stdio: 'pipe' });
      } catch (error) {
        code = (error as { status: number }).status;
        output = String((error as { stdout: Buffer }).stdout);
      }
      expect({ code, said: output.includes(said) }).toEqual({ code: 78, said: true });
    }
  });
});
