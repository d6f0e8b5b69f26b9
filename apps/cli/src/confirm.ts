import { createInterface } from 'node:readline/promises';
import { CliError } from './cli-error';

/**
 * Asks the operator `question` on a terminal; `yes` (from --yes) answers it beforehand. Without a
 * terminal to ask and without --yes, refuses: a script must say --yes to do what needs confirming.
 */
export async function confirm(question: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new CliError(`${question}\nRefused: no terminal to confirm on; pass --yes to go ahead.`);
  }
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('Not confirmed: nothing was changed.');
  } finally {
    prompt.close();
  }
}
