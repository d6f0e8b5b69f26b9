import type { Command } from 'commander';
import type { NamespaceList } from '@sluice/protocol';
import { withContext } from '../context';
import { print, table } from '../output';

/** `sluice namespaces`: the namespaces that hold state or policies, with their dependency counts. */
export function registerNamespaces(program: Command): void {
  program
    .command('namespaces')
    .description('list the namespaces that hold state or policies (those the token covers)')
    .action(
      withContext(async ({ client, output }) => {
        const list = await client.get<NamespaceList>('admin/v1/namespaces');
        print(output, list, () =>
          table(list.items, [
            { header: 'NAMESPACE', value: (item) => item.namespace },
            { header: 'DEPENDENCIES', value: (item) => item.dependencies },
          ]),
        );
      }),
    );
}
