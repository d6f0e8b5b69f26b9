import { Option, type Command } from 'commander';
import type { BreakerActionResult, BreakerList, ForceBreakerRequest } from '@sluice/protocol';
import type { AdminClient } from '../admin-client';
import { confirm } from '../confirm';
import { segment, withContext, type CommandContext } from '../context';
import { durationSeconds } from '../durations';
import { fields, instant, print } from '../output';

interface ForceOptions {
  reason: string;
  for?: number;
  yes?: boolean;
}

const FORCED = {
  trip: { path: 'trip', verb: 'Trip', summary: 'force a breaker open fleet-wide: every call is refused' },
  'force-close': {
    path: 'force-close',
    verb: 'Force closed',
    summary: 'force a breaker closed fleet-wide: failures no longer open it',
  },
} as const;

/** `sluice trip`, `sluice force-close` and `sluice reset`. */
export function registerBreakerActions(program: Command): void {
  for (const [name, action] of Object.entries(FORCED)) {
    program
      .command(name)
      .description(`${action.summary} (audited with the reason)`)
      .argument('<ns>', 'the namespace')
      .argument('<dep>', 'the dependency')
      .requiredOption('--reason <text>', 'why, for the audit log and everyone who sees the breaker')
      .addOption(
        new Option('--for <duration>', 'how long (90s, 10m, 2h, 1d); absent: until reset').argParser(durationSeconds),
      )
      .option('-y, --yes', 'no confirmation for a dependency no caller has used (a likely typo)')
      .action(
        withContext(async (context, ns: string, dep: string, options: ForceOptions) => {
          const body: ForceBreakerRequest = { reason: options.reason, durationSeconds: options.for };
          await force(context, { ns, dep, path: action.path, verb: action.verb }, body, options.yes);
        }),
      );
  }

  program
    .command('reset')
    .description('return a breaker to automatic operation: closed, its window cleared (audited)')
    .argument('<ns>', 'the namespace')
    .argument('<dep>', 'the dependency')
    .option('--reason <text>', 'why, for the audit log')
    .action(
      withContext(async ({ client, output }, ns: string, dep: string, options: { reason?: string }) => {
        const result = await act(
          client,
          ns,
          dep,
          'reset',
          options.reason === undefined ? {} : { reason: options.reason },
        );
        print(output, result, () => describe(result));
      }),
    );
}

/**
 * A trip or force-close. A dependency the namespace does not list is one no caller (nor operator)
 * has used within a day: the operator confirms before anything changes. One the namespace lists
 * only because of an operator's earlier action comes back `known: false`: said on stderr.
 */
async function force(
  { client, output }: CommandContext,
  target: { ns: string; dep: string; path: string; verb: string },
  body: ForceBreakerRequest,
  yes: boolean | undefined,
): Promise<void> {
  const { ns, dep } = target;
  const listed = await client.get<BreakerList>(`admin/v1/${segment(ns)}/breakers`);
  if (!listed.items.some((item) => item.dependency === dep)) {
    await confirm(
      `No caller has reported or asked for "${dep}" in namespace "${ns}" within a day (a typo?). ` +
        `${target.verb} it anyway?`,
      yes,
    );
  }
  const result = await act(client, ns, dep, target.path, body);
  if (!result.known && !yes) {
    process.stderr.write(
      `sluice: warning: no caller has reported or asked for "${dep}" in namespace "${ns}" within a day; ` +
        'only operators\u2019 actions know it.\n',
    );
  }
  print(output, result, () => describe(result));
}

async function act(client: AdminClient, ns: string, dep: string, action: string, body: object) {
  const path = `admin/v1/${segment(ns)}/breakers/${segment(dep)}/${action}`;
  return (await client.request<BreakerActionResult>('POST', path, { body })).body;
}

function describe(result: BreakerActionResult): string {
  return fields([
    ['dependency', result.dependency],
    ['breaker', result.state],
    ['since', instant(result.since)],
    ['until', result.openUntil === null && result.state.startsWith('forced') ? 'reset' : instant(result.openUntil)],
    ['reason', result.reason],
    ['known', result.known ? 'yes' : 'no: no caller has used it within a day'],
  ]);
}
