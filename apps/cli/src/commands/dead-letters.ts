import { InvalidArgumentError, type Command } from 'commander';
import type { DeadLetter, DeadLetterPage, QueueList } from '@sluice/protocol';
import type { AdminClient } from '../admin-client';
import { CliError } from '../cli-error';
import { confirm } from '../confirm';
import { segment, withContext } from '../context';
import { fields, instant, print, table, text } from '../output';

/** The page size `dlq show` reads with while it looks for an entry (the API's largest). */
const SEARCH_PAGE = 1000;

const queuePath = (ns: string, queue: string) => `admin/v1/${segment(ns)}/queues/${segment(queue)}/dead-letters`;

/** `sluice dlq queues|list|show|redrive|purge`: the queues holding dead letters, and a queue's dead letters. */
export function registerDeadLetters(program: Command): void {
  const dlq = program.command('dlq').description('list, inspect, redrive and purge a queue\u2019s dead letters');

  dlq
    .command('queues')
    .description('list the queues of a namespace that hold dead letters, by name, with how many')
    .argument('<ns>', 'the namespace')
    .option('--limit <n>', 'queues per page (1-1000)', positiveInteger, 100)
    .option('--cursor <cursor>', 'the page after this cursor (printed as `next` by the previous page)')
    .action(
      withContext(async ({ client, output }, ns: string, options: { limit: number; cursor?: string }) => {
        const page = await client.get<QueueList>(`admin/v1/${segment(ns)}/queues`, {
          limit: options.limit,
          cursor: options.cursor,
        });
        print(output, page, () => {
          const rows = table(
            page.items,
            [
              { header: 'QUEUE', value: (item) => item.queue },
              { header: 'DEAD LETTERS', value: (item) => item.deadLetters },
              { header: 'LAST PARKED', value: (item) => instant(item.lastDeadLetteredAt) },
            ],
            '(no queue holds dead letters)',
          );
          return page.next ? `${rows}\nmore: --cursor ${page.next}` : rows;
        });
      }),
    );

  dlq
    .command('list')
    .description('list a queue\u2019s dead letters, oldest first, a page at a time')
    .argument('<ns>', 'the namespace')
    .argument('<queue>', 'the queue')
    .option('--limit <n>', 'entries per page (1-1000)', positiveInteger, 100)
    .option('--cursor <cursor>', 'the page after this cursor (printed as `next` by the previous page)')
    .action(
      withContext(
        async ({ client, output }, ns: string, queue: string, options: { limit: number; cursor?: string }) => {
          const page = await client.get<DeadLetterPage>(queuePath(ns, queue), {
            limit: options.limit,
            cursor: options.cursor,
          });
          print(output, page, () => {
            const rows = table(page.items, [
              { header: 'ID', value: (entry) => entry.id },
              { header: 'ATTEMPTS', value: (entry) => entry.attempts },
              { header: 'PARKED', value: (entry) => instant(entry.deadLetteredAt) },
              { header: 'ERROR', value: (entry) => oneLine(entry.error) },
            ]);
            return page.next ? `${rows}\nmore: --cursor ${page.next}` : rows;
          });
        },
      ),
    );

  dlq
    .command('show')
    .description('print one dead letter: its payload, last error and attempts')
    .argument('<ns>', 'the namespace')
    .argument('<queue>', 'the queue')
    .argument('<id>', 'the dead letter\u2019s id (its message id)')
    .action(
      withContext(async ({ client, output }, ns: string, queue: string, id: string) => {
        const entry = await find(client, ns, queue, id);
        print(output, entry, () => describe(entry));
      }),
    );

  dlq
    .command('redrive')
    .description('take a dead letter back out: removed, its attempt count reset; prints it to re-enqueue (audited)')
    .argument('<ns>', 'the namespace')
    .argument('<queue>', 'the queue')
    .argument('<id>', 'the dead letter\u2019s id')
    .action(
      withContext(async ({ client, output }, ns: string, queue: string, id: string) => {
        const path = `${queuePath(ns, queue)}/${segment(id)}/redrive`;
        const entry = (await client.request<DeadLetter>('POST', path)).body;
        print(output, entry, () => `redriven:\n${describe(entry)}`);
      }),
    );

  dlq
    .command('purge')
    .description('delete a dead letter for good (audited; asks first unless --yes)')
    .argument('<ns>', 'the namespace')
    .argument('<queue>', 'the queue')
    .argument('<id>', 'the dead letter\u2019s id')
    .option('-y, --yes', 'no confirmation')
    .action(
      withContext(async ({ client, output }, ns: string, queue: string, id: string, options: { yes?: boolean }) => {
        await confirm(`Delete dead letter "${id}" of queue ${ns}/${queue} for good?`, options.yes);
        await client.request('DELETE', `${queuePath(ns, queue)}/${segment(id)}`);
        print(output, { purged: id }, () => `purged ${id}`);
      }),
    );
}

/** One entry, paging through the queue (at most 10,000 entries: ten pages). */
async function find(client: AdminClient, ns: string, queue: string, id: string): Promise<DeadLetter> {
  let cursor: string | undefined;
  do {
    const page = await client.get<DeadLetterPage>(queuePath(ns, queue), { limit: SEARCH_PAGE, cursor });
    const entry = page.items.find((item) => item.id === id);
    if (entry) return entry;
    cursor = page.next ?? undefined;
  } while (cursor);
  throw new CliError(`queue ${ns}/${queue} holds no dead letter "${id}"`);
}

function describe(entry: DeadLetter): string {
  return fields([
    ['id', entry.id],
    ['message', entry.messageId],
    ['attempts', entry.attempts],
    ['first attempt', instant(entry.firstAttemptAt)],
    ['parked', instant(entry.deadLetteredAt)],
    ['error', entry.error],
    ['payload', JSON.stringify(entry.payload, null, 2)],
  ]);
}

const oneLine = (value: string | null) => {
  const line = text(value).replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 59)}\u2026` : line;
};

export function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('a whole number, at least 1');
  return number;
}
