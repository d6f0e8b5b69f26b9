import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(120_000);

const MAIN = join(__dirname, '../../dist/apps/coordinator/src/main.js');

interface Boot {
  code: number | null;
  lines: string[];
}

/** Boots the built coordinator with `env` alone; its exit code and every line it wrote. */
function boot(env: Record<string, string>): Promise<Boot> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, ...env }, stdio: 'pipe' });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after 60 s: ${output}`));
    }, 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, lines: output.split('\n').filter(Boolean) });
    });
  });
}

const files = mkdtempSync(join(tmpdir(), 'sluice-boot-'));
const file = (name: string, content: string) => {
  const path = join(files, name);
  writeFileSync(path, content);
  return path;
};
const TOKEN = (secret: string) => JSON.stringify([{ id: 'ops', secret, role: 'admin', namespaces: ['*'] }]);

// Each bad setting: the built service exits 78 (EX_CONFIG) with one JSON line that names every
// bad variable and says what each must be, in words an operator can act on.
const BAD_SETTINGS: Array<[string, Record<string, string>, string[], number?]> = [
  ['a port that is not a number', { SLUICE_PORT: 'abc' }, ['SLUICE_PORT: must be a whole number from 0 to 65535']],
  ['a port out of range', { SLUICE_PORT: '70000' }, ['SLUICE_PORT: must be a whole number from 0 to 65535']],
  ['an unknown log level', { SLUICE_LOG_LEVEL: 'loud' }, ['SLUICE_LOG_LEVEL: must be one of fatal, error']],
  ['a Redis URL without a scheme', { SLUICE_REDIS_URL: 'cache:6379' }, ['SLUICE_REDIS_URL: must be a redis://']],
  [
    'a short token secret',
    { SLUICE_TOKENS: TOKEN('short') },
    ['SLUICE_TOKENS: token 0 ("ops"): secret must be at least 16 characters'],
  ],
  ['tokens that are not JSON', { SLUICE_TOKENS: '[{' }, ['SLUICE_TOKENS: is not valid JSON']],
  [
    'a policies file with a ratio written as a percentage',
    { SLUICE_POLICIES_FILE: file('percent.yml', 'default:\n  retryBudget: { ratio: 10% }\n') },
    ['SLUICE_POLICIES_FILE: ', 'default.retryBudget.ratio: must be a number'],
  ],
  [
    'a policies file that is not YAML',
    { SLUICE_POLICIES_FILE: file('broken.yml', 'default: [\n') },
    ['SLUICE_POLICIES_FILE: cannot read policies from'],
  ],
  [
    'several bad settings at once',
    {
      SLUICE_PORT: 'abc',
      SLUICE_STORE_TIMEOUT_MS: '0',
      SLUICE_TOKENS: TOKEN('short'),
      SLUICE_POLICIES_FILE: file('two.yml', 'default:\n  retryBudget: { ratio: 10%, maxAttempts: 0 }\n'),
    },
    [
      'SLUICE_PORT: must be a whole number from 0 to 65535',
      'SLUICE_STORE_TIMEOUT_MS: must be a whole number from 1 to 60000',
      'SLUICE_TOKENS: token 0 ("ops"): secret must be at least 16 characters',
      'default.retryBudget.ratio: must be a number',
      'default.retryBudget.maxAttempts: must not be less than 1',
    ],
    5,
  ],
];

describe('boot with bad settings', () => {
  it.each(BAD_SETTINGS)('%s: exit 78, one JSON line naming the variable', async (_name, env, said, problems = 1) => {
    const { code, lines } = await boot(env);
    const records = lines.map((line) => JSON.parse(line) as { msg: string; problems?: unknown[] });
    expect({ code, lines: records.length }).toEqual({ code: 78, lines: 1 });
    const [record] = records;
    expect(record.msg).toMatch(/^invalid configuration: /);
    for (const text of said) expect(record.msg).toContain(text);
    expect(record.problems).toHaveLength(problems);
    expect(record.msg).not.toMatch(/\n\s+at /); // no stack trace
  });
});
