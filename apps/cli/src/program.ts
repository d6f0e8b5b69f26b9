import { Command, CommanderError, Option } from 'commander';
import { CliError, EXIT } from './cli-error';
import { registerAudit } from './commands/audit';
import { registerBreakerActions } from './commands/breakers';
import { registerDeadLetters } from './commands/dead-letters';
import { registerDependencies } from './commands/dependencies';
import { registerNamespaces } from './commands/namespaces';
import { registerPolicy } from './commands/policy';
import { registerToken } from './commands/token';
import { registerWatch } from './commands/watch';
import { OUTPUT_FORMATS } from './output';

const DEFAULT_URL = 'http://127.0.0.1:8080';

const EXIT_CODES_HELP = `
Environment: SLUICE_URL (the coordinator, default ${DEFAULT_URL}), SLUICE_TOKEN (an admin token).
Exit codes: 0 done; 1 refused or failed (by the coordinator, e.g. 401, 403, 412, 503, or not
confirmed); 2 bad usage.`;

/** The `sluice` program: global options, then one command per operators' task. */
export function buildProgram(): Command {
  const program = new Command('sluice')
    .description(
      'Operate a Sluice fleet from a terminal: namespaces, breakers, policies, dead letters, audit, live events.',
    )
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addOption(new Option('--url <url>', 'the coordinator\u2019s base URL').env('SLUICE_URL').default(DEFAULT_URL))
    .addOption(
      new Option('--token <token>', 'an admin token (prefer SLUICE_TOKEN: arguments show in ps)').env('SLUICE_TOKEN'),
    )
    .addOption(new Option('-o, --output <format>', 'table or json').choices(OUTPUT_FORMATS).default('table'))
    .addHelpText('after', EXIT_CODES_HELP);
  registerNamespaces(program);
  registerDependencies(program);
  registerBreakerActions(program);
  registerPolicy(program);
  registerDeadLetters(program);
  registerAudit(program);
  registerWatch(program);
  registerToken(program);
  return program;
}

/** Runs `sluice` on `argv` (process.argv's form); answers the exit code. */
export async function run(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return EXIT.ok;
  } catch (error) {
    // Commander has printed its message (or the help) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof CliError) {
      process.stderr.write(`sluice: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`sluice: unexpected failure: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.failed;
  }
}
