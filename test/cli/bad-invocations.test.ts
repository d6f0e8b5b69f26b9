import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ADMIN_TOKEN } from '../support/coordinator';
import { findFreePort } from '../support/ports';
import { runSluice, type SluiceEnv } from '../support/sluice-cli';
import { testCoordinator, type TestCoordinator } from '../support/test-coordinator';

jest.setTimeout(60_000);

// Ordinary mistakes get one line that says what is wrong and what to do, never a stack trace:
// exit 2 for bad usage (caught before anything is sent), 1 for a refusal or an unreachable or
// foreign server.
describe('sluice with ordinary mistakes', () => {
  let coordinator: TestCoordinator;
  let foreign: Server;
  let foreignUrl: string;
  let closedUrl: string;

  beforeAll(async () => {
    coordinator = await testCoordinator({
      redis: true,
      listen: true,
      label: 'cli-mistakes',
      config: { tokens: [ADMIN_TOKEN] },
    });
    // A web server that is not Sluice: HTML for every path.
    foreign = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>It works!</body></html>');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    closedUrl = `http://127.0.0.1:${await findFreePort()}`;
  });
  afterAll(async () => {
    await coordinator?.close();
    await new Promise((resolve) => foreign?.close(resolve));
  });

  const cases: Array<[string, () => SluiceEnv, string[], number, RegExp]> = [
    [
      'SLUICE_URL without a scheme',
      () => ({ url: '127.0.0.1:8081', token: ADMIN_TOKEN.secret }),
      ['deps'],
      2,
      /^sluice: --url must start with http:\/\/ or https:\/\/, e\.g\. http:\/\/127\.0\.0\.1:8080; got "127\.0\.0\.1:8081" \(from SLUICE_URL\)\n$/,
    ],
    [
      '--url without a scheme',
      () => ({ url: coordinator.url, token: ADMIN_TOKEN.secret }),
      ['--url', 'sluice.internal:8080', 'deps'],
      2,
      /^sluice: --url must start with http:\/\/ or https:\/\/.*got "sluice\.internal:8080"\n$/,
    ],
    [
      'a server that is not Sluice',
      () => ({ url: foreignUrl, token: ADMIN_TOKEN.secret }),
      ['deps'],
      1,
      /answered 200 with text\/html, not the coordinator's JSON: is --url \(SLUICE_URL\) a Sluice coordinator's base URL\?\n$/,
    ],
    [
      "the console's URL instead of the base URL",
      () => ({ url: `${coordinator.url}/console`, token: ADMIN_TOKEN.secret }),
      ['deps'],
      1,
      /--url should be the coordinator's base URL without a path \(e\.g\. http:\/\/127\.0\.0\.1:\d+\), not http:\/\/127\.0\.0\.1:\d+\/console\.\n$/,
    ],
    [
      'no token at all',
      () => ({ url: coordinator.url }),
      ['deps'],
      1,
      /\(401 unauthorized: [^)]*\)\nNo token was given: pass an admin token with --token or SLUICE_TOKEN\.\n$/,
    ],
    [
      'a token the coordinator does not know',
      () => ({ url: coordinator.url, token: 'not-a-known-token-000' }),
      ['deps'],
      1,
      /The coordinator does not know this token: pass an admin token with --token or SLUICE_TOKEN\.\n$/,
    ],
    [
      'nothing listening',
      () => ({ url: closedUrl, token: ADMIN_TOKEN.secret }),
      ['deps'],
      1,
      /^sluice: cannot reach the coordinator at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); set --url or SLUICE_URL\n$/,
    ],
  ];

  it.each(cases)('%s', async (_name, env, args, code, stderr) => {
    const run = await runSluice(env(), args);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code, stdout: '' });
    expect(run.stderr).toMatch(stderr);
    expect(run.stderr).not.toMatch(/\n\s+at |TypeError|unexpected failure/);
  });
});
