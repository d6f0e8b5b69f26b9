import { execFile } from 'node:child_process';
import { startCoordinatorProcess, type CoordinatorProcess } from '../support/coordinator-process';
import { findFreePort } from '../support/ports';
import { walkthroughLinePattern, walkthroughSteps } from '../support/doc-walkthrough';

function bash(script: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', ['-euo', 'pipefail', '-c', script], { timeout: 10_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

describe('the README walk-through, pasted in order into a fresh service', () => {
  let coordinator: CoordinatorProcess;
  let port: number;
  const steps = walkthroughSteps('README.md', '## Walk-through');

  beforeAll(async () => {
    port = await findFreePort();
    coordinator = await startCoordinatorProcess(port);
  });

  afterAll(() => coordinator?.stop());

  it('has commands, each with the answers it prints', () => {
    expect(steps.length).toBeGreaterThanOrEqual(4);
    for (const step of steps) expect(step.expected.length).toBeGreaterThan(0);
  });

  it('prints what the README says, command after command', async () => {
    for (const { script, expected } of steps) {
      // curl -s prints no newline after a JSON body: one answer per command, as the README shows.
      const commands = script
        .replace(/\\\n/g, ' ')
        .split('\n')
        .filter((line) => line.trim().startsWith('curl'));
      const printed: string[] = [];
      for (const command of commands) {
        printed.push((await bash(command.replaceAll('localhost:8080', `127.0.0.1:${port}`))).trim());
      }
      expect(printed.length).toBe(expected.length);
      printed.forEach((line, i) =>
        expect({ command: commands[i], line }).toEqual({
          command: commands[i],
          line: expect.stringMatching(walkthroughLinePattern(expected[i])),
        }),
      );
    }
  });
});
