import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { usageError } from '../cli-error';

/** The shortest secret the coordinator accepts. */
const MIN_SECRET_LENGTH = 16;

/**
 * `sluice token hash`: the `sha256:<hex>` form of a secret read from stdin, for the tokens file
 * (the coordinator compares digests, so the file need not hold the secret). Nothing is sent.
 */
export function registerToken(program: Command): void {
  program
    .command('token')
    .description('work with bearer tokens')
    .command('hash')
    .description('print the sha256: form of the secret read from stdin, for SLUICE_TOKENS_FILE')
    .action(() => {
      const secret = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
      if (secret.length < MIN_SECRET_LENGTH) {
        throw usageError(`the secret on stdin must be at least ${MIN_SECRET_LENGTH} characters`);
      }
      process.stdout.write(`sha256:${createHash('sha256').update(secret).digest('hex')}\n`);
    });
}
