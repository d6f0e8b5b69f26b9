// The SDK's suites (libs/client and test/sdk) on every supported Node.js line other than this
// process's: `npm run test:node-lines` (extra arguments go to jest). npm test runs them on this line.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, currentLine, nodeLines } from './support/node-lines.mjs';

const JEST = join(ROOT, 'node_modules/jest/bin/jest.js');
const failed = [];
for (const { node } of nodeLines().filter(({ line }) => line !== currentLine())) {
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`\nThe SDK's suites on Node ${version} (${node})`);
  const run = spawnSync(node, [JEST, 'libs/client', 'test/sdk', ...process.argv.slice(2)], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (run.status !== 0) failed.push(version);
}
if (failed.length > 0) {
  console.error(`The SDK's suites failed on Node ${failed.join(', ')}`);
  process.exitCode = 1;
}
