import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';
import { SLUICE_CLI } from '../support/sluice-cli';
import { waitUntil } from '../support/time';
import { walkthroughLinePattern, walkthroughSteps } from '../support/doc-walkthrough';

const TOKEN = { id: 'ops', secret: 'readme-admin-secret-0123', role: 'admin', namespaces: ['*'] };
const SECOND_TERMINAL = '# in a second terminal';

const expectLines = (printed: string[], expected: string[], where: string) => {
  expect({ where, lines: printed.length }).toEqual({ where, lines: expected.length });
  printed.forEach((line, i) =>
    expect({ where, line }).toEqual({ where, line: expect.stringMatching(walkthroughLinePattern(expected[i])) }),
  );
};

/** The block as pasted, `sluice` being the built CLI; the doc's own `export` of the URL and token is the test's. */
const bashScript = (script: string, exec: boolean) =>
  `sluice() { ${exec ? 'exec ' : ''}node "$SLUICE_CLI" "$@"; }\n` +
  script
    .split('\n')
    .filter((line) => !line.startsWith('export '))
    .join('\n');

// The CLI incident of docs/operations.md, pasted in order into a fresh built service with an admin
// token; a block meant for a second terminal runs beside the others until the end.
describe('the CLI incident walk-through of docs/operations.md', () => {
  let coordinator: CoordinatorProcess;
  let env: NodeJS.ProcessEnv;
  const background: Array<{ child: ChildProcess; lines: string[]; expected: string[]; script: string }> = [];

  beforeAll(async () => {
    const port = await findFreePort();
    coordinator = await startCoordinatorProcess(port, { SLUICE_TOKENS: JSON.stringify([TOKEN]) });
    env = { PATH: process.env.PATH, SLUICE_CLI, SLUICE_URL: `http://127.0.0.1:${port}`, SLUICE_TOKEN: TOKEN.secret };
    // The incident: callers report payments-api healthy, inventory failing (its breaker opens).
    const response = await fetch(`${env.SLUICE_URL}/v1/shop/reports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        reporter: 'checkout-1',
        deps: [
          { dep: 'payments-api', requests: 1000, successes: 990, failures: 10, slow: 0 },
          { dep: 'inventory', requests: 20, successes: 5, failures: 15, slow: 0 },
        ],
      }),
    });
    expect(response.status).toBe(200);
  });
  afterAll(async () => {
    background.forEach(({ child }) => child.kill('SIGKILL'));
    await coordinator?.stop();
  });

  it('prints what the doc says, block after block', async () => {
    const walk = walkthroughSteps('docs/operations.md', '### An incident, from a terminal');
    expect(walk.length).toBeGreaterThanOrEqual(4);
    for (const step of walk) {
      if (step.script.includes(SECOND_TERMINAL)) {
        const child = spawn('bash', ['-c', bashScript(step.script, true)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        const running = { child, lines: [] as string[], expected: step.expected, script: step.script };
        child.stdout
          .setEncoding('utf8')
          .on('data', (chunk: string) => running.lines.push(...chunk.split('\n').filter(Boolean)));
        background.push(running);
        await waitUntil(
          () => running.lines.length > 0,
          10_000,
          () => `${step.script} printed nothing`,
        );
        continue;
      }
      const printed = await bash(bashScript(step.script, false), env);
      expectLines(printed.split('\n').filter(Boolean), step.expected, step.script);
    }
    for (const running of background) {
      await waitUntil(
        () => running.lines.length >= running.expected.length,
        10_000,
        () => `${running.script} printed ${JSON.stringify(running.lines)}`,
      );
      running.child.kill('SIGINT');
      expectLines(running.lines, running.expected, running.script);
    }
  });
});

function bash(script: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', ['-euo', 'pipefail', '-c', script], { env, timeout: 20_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}
