import { Option, type Command } from 'commander';
import type { AuditEntry, AuditLog } from '@sluice/protocol';
import { withContext } from '../context';
import { durationText, sinceInstant } from '../durations';
import { instant, print, table } from '../output';
import { positiveInteger } from './dead-letters';

interface AuditOptions {
  ns?: string;
  since?: number;
  limit: number;
}

/** `sluice audit [--ns] [--since] [--limit]`: who did what, when and why. */
export function registerAudit(program: Command): void {
  program
    .command('audit')
    .description('read the audit log: breaker actions, policy changes, dead-letter redrives and purges')
    .option('--ns <ns>', 'one namespace (a token of some namespaces only must name one)')
    .addOption(
      new Option('--since <when>', 'only entries since: 30m, 2h, 1d back, or an ISO 8601 time').argParser(
        (value: string) => sinceInstant(value),
      ),
    )
    .option('--limit <n>', 'the latest n entries read (1-1000)', positiveInteger, 100)
    .action(
      withContext(async ({ client, output }, options: AuditOptions) => {
        const log = await client.get<AuditLog>('admin/v1/audit', { ns: options.ns, limit: options.limit });
        const items = log.items.filter((entry) => options.since === undefined || entry.at >= options.since);
        print(output, { items }, () =>
          table(items, [
            { header: 'AT', value: (entry) => instant(entry.at) },
            { header: 'ACTOR', value: (entry) => entry.actor },
            { header: 'ACTION', value: (entry) => entry.action },
            { header: 'NAMESPACE', value: (entry) => entry.namespace },
            { header: 'TARGET', value: (entry) => entry.target },
            { header: 'FOR', value: (entry) => forced(entry) },
            { header: 'UNTIL', value: (entry) => (entry.endsAt === null ? '-' : instant(entry.endsAt)) },
            { header: 'REASON', value: (entry) => entry.reason },
          ]),
        );
      }),
    );
}

/** How long a trip or force-close set its state: its duration, `until reset`, or `-` for other actions. */
function forced(entry: AuditEntry): string {
  if (entry.durationMs !== null) return durationText(entry.durationMs);
  return entry.action === 'breaker.trip' || entry.action === 'breaker.force_close' ? 'until reset' : '-';
}
