/** Exit codes of `sluice`: 0 done, 1 refused or failed (by the coordinator or the operator), 2 bad usage. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** A failure to report on stderr and exit with: the message says what happened and what to do. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad usage that commander cannot see (a malformed policy target, a file that is not JSON). */
export const usageError = (message: string): CliError => new CliError(message, EXIT.usage);
