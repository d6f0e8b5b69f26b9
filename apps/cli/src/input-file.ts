import { readFileSync } from 'node:fs';
import { usageError } from './cli-error';

/** The text of `file` (`-`: stdin); one that cannot be read is bad usage. */
export function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
}
