import type { Command } from 'commander';
import type { BreakerList, BudgetList, DependencyView, NamespaceList } from '@sluice/protocol';
import type { AdminClient } from '../admin-client';
import { segment, withContext } from '../context';
import { fields, instant, print, table } from '../output';
import { policyText } from './policy';

/** One row of `sluice deps`: a dependency's breaker and retry budget. */
export interface DependencyRow {
  namespace: string;
  dependency: string;
  state: string;
  since: number | null;
  openUntil: number | null;
  reason: string | null;
  retries: number;
  /** Of the retries, those reported to have succeeded (an adaptive budget gives them back). */
  retriesSucceeded: number;
  limit: number;
  /** The most retries the window holds however many succeed (the limit under a fixed budget). */
  cap: number;
  exhausted: boolean;
}

/** `sluice deps [ns]` and `sluice dep <ns> <dep>`. */
export function registerDependencies(program: Command): void {
  program
    .command('deps')
    .description('list the dependencies of a namespace (or of every namespace) with breaker and budget')
    .argument('[ns]', 'a namespace; absent: every namespace the token covers')
    .option('--open', 'only breakers that are not closed (open, half-open or forced)')
    .action(
      withContext(async ({ client, output }, ns: string | undefined, options: { open?: boolean }) => {
        const namespaces = ns
          ? [ns]
          : (await client.get<NamespaceList>('admin/v1/namespaces')).items.map((item) => item.namespace);
        const rows: DependencyRow[] = [];
        for (const namespace of namespaces) rows.push(...(await dependencyRows(client, namespace)));
        const shown = options.open ? rows.filter((row) => row.state !== 'closed') : rows;
        print(output, { items: shown }, () =>
          table(shown, [
            { header: 'NAMESPACE', value: (row) => row.namespace },
            { header: 'DEPENDENCY', value: (row) => row.dependency },
            { header: 'BREAKER', value: (row) => row.state },
            { header: 'SINCE', value: (row) => instant(row.since) },
            { header: 'UNTIL', value: (row) => instant(row.openUntil) },
            { header: 'RETRIES', value: (row) => `${row.retries}/${row.limit}${row.exhausted ? ' exhausted' : ''}` },
            { header: 'SUCCEEDED', value: (row) => String(row.retriesSucceeded) },
            { header: 'CAP', value: (row) => String(row.cap) },
            { header: 'REASON', value: (row) => row.reason },
          ]),
        );
      }),
    );

  program
    .command('dep')
    .description(
      'show one dependency as the fleet sees it: breaker, budget, reporters, latency, and the whole policy in ' +
        'effect (mode, retry budget, backoff, breaker, rate and concurrency limits), as `policy get` prints it',
    )
    .argument('<ns>', 'the namespace')
    .argument('<dep>', 'the dependency')
    .action(
      withContext(async ({ client, output }, ns: string, dep: string) => {
        const view = await client.get<DependencyView>(`v1/${segment(ns)}/deps/${segment(dep)}`);
        const { breaker, budget, latency } = view;
        print(output, view, () =>
          [
            fields([
              ['dependency', `${view.namespace}/${view.dependency}`],
              ['breaker', breaker.state],
              ['since', instant(breaker.since)],
              ['until', instant(breaker.openUntil)],
              ['reason', breaker.reason],
              ['calls', `${breaker.calls} (failed ${percent(breaker.failureRate)}, slow ${percent(breaker.slowRate)})`],
              [
                'retries',
                `${budget.retries}/${budget.limit} in ${budget.windowSeconds} s (${budget.requests} requests)`,
              ],
              ['budget', `${budget.mode}: ${budget.retriesSucceeded} succeeded, cap ${budget.cap}`],
              ['reporters', String(view.reporters)],
              [
                'limits hold',
                `${view.usage.leases} leases` +
                  (view.usage.rateRemaining === null ? '' : `, ${view.usage.rateRemaining} of the rate burst left`),
              ],
              [
                'latency',
                `p50 ${ms(latency.p50)}, p95 ${ms(latency.p95)}, p99 ${ms(latency.p99)} (${latency.count} calls)`,
              ],
            ]),
            'policy in effect (its own document, over the namespace default, over the defaults):',
            policyText(view.policy),
          ].join('\n'),
        );
      }),
    );
}

/** A namespace's dependencies: its breakers joined with its budgets, by name. */
async function dependencyRows(client: AdminClient, namespace: string): Promise<DependencyRow[]> {
  const [breakers, budgets] = await Promise.all([
    client.get<BreakerList>(`admin/v1/${segment(namespace)}/breakers`),
    client.get<BudgetList>(`admin/v1/${segment(namespace)}/budgets`),
  ]);
  const budgetOf = new Map(budgets.items.map((budget) => [budget.dependency, budget]));
  return breakers.items.map((breaker) => {
    const budget = budgetOf.get(breaker.dependency);
    return {
      namespace,
      dependency: breaker.dependency,
      state: breaker.state,
      since: breaker.since,
      openUntil: breaker.openUntil,
      reason: breaker.reason,
      retries: budget?.retries ?? 0,
      retriesSucceeded: budget?.retriesSucceeded ?? 0,
      limit: budget?.limit ?? 0,
      cap: budget?.cap ?? 0,
      exhausted: budget?.exhausted ?? false,
    };
  });
}

const percent = (rate: number) => `${Math.round(rate * 1000) / 10} %`;
const ms = (value: number | null) => (value === null ? '-' : `${value} ms`);
