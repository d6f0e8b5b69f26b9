// The supported Node.js lines and a binary of each, from .ci/node-line (which installs the registry's
// node@<line> into .ci/.node/<line> the first time a line other than this shell's is asked for).
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const NODE_LINE = join(ROOT, '.ci/node-line');

const ask = (...args) =>
  execFileSync('bash', [NODE_LINE, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

/** This process's major line, e.g. '24'. */
export const currentLine = () => process.versions.node.split('.')[0];

/** Every supported line (22, 24, 26) with the path of a binary of it; this process's own for its line. */
export function nodeLines() {
  return ask()
    .split(' ')
    .map((line) => ({ line, node: line === currentLine() ? process.execPath : ask(line) }));
}
