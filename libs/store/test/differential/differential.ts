import { seededRandom } from '@sluice/core';
import type { StoreUnderTest } from '../store-conformance';
import { generateRun, type Op } from './operations';
import { StepGate, runBoth, type Divergence } from './runner';

export interface DifferentialOptions {
  seeds: readonly number[];
  /** Operations generated per seed (each followed by its reads). */
  steps: number;
  /** Runs that go on at once: their waits overlap, their calls take turns. */
  parallel: number;
}

/**
 * The seeds to run: SLUICE_DIFF_SEEDS=<n> runs seeds 1..n (a long run); otherwise the fixed list.
 */
export function seedsFromEnv(fixed: readonly number[]): number[] {
  const count = Number(process.env.SLUICE_DIFF_SEEDS);
  return Number.isInteger(count) && count > 0 ? Array.from({ length: count }, (_, i) => i + 1) : [...fixed];
}

const describeOp = (op: Op, index: number) => `  ${String(index).padStart(4)} ${JSON.stringify(op)}`;

/** A failure as printed: the seed, where the stores disagreed, and the operations up to there. */
function report(seed: number, divergence: Divergence, prefix: readonly Op[], note: string): string {
  return [
    `seed ${seed}: the stores disagree at operation ${divergence.step} (${divergence.what}); ${note}`,
    `  Redis:  ${JSON.stringify(divergence.redis)}`,
    `  memory: ${JSON.stringify(divergence.memory)}`,
    `shortest failing prefix (${prefix.length} operations; rerun with seed ${seed}):`,
    ...prefix.map(describeOp),
  ].join('\n');
}

/**
 * Runs every seed on both stores; answers one report per seed whose stores disagreed. A failing
 * seed is shrunk by trying its prefixes: every operation before the divergence was compared equal,
 * so the prefix that ends at it is run again from fresh stores, and the shortest that fails is printed.
 */
export async function runDifferential(
  options: DifferentialOptions,
  openRedis: () => Promise<StoreUnderTest>,
): Promise<{ failures: string[]; calls: number; spanned: number; atExpiry: number }> {
  const gate = new StepGate();
  const failures: string[] = [];
  const queue = [...options.seeds];
  const worker = async () => {
    for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
      const ops = generateRun(seededRandom(seed), options.steps);
      const divergence = await runBoth(ops, openRedis, gate);
      if (!divergence) continue;
      const prefix = ops.slice(0, divergence.step + 1);
      const again = await runBoth(prefix, openRedis, gate);
      if (again) failures.push(report(seed, again, prefix.slice(0, again.step + 1), 'reproduced on its prefix'));
      else failures.push(report(seed, divergence, prefix, 'its prefix alone passed on a rerun (timing)'));
    }
  };
  await Promise.all(Array.from({ length: options.parallel }, worker));
  return { failures, ...gate.counts };
}

/** Runs the seeds; a long run (SLUICE_DIFF_SEEDS) says how many calls it compared. */
export async function expectAlike(label: string, options: DifferentialOptions, open: () => Promise<StoreUnderTest>) {
  const { failures, calls, spanned, atExpiry } = await runDifferential(options, open);
  if (process.env.SLUICE_DIFF_SEEDS) {
    process.stdout.write(
      `differential (${label}): ${options.seeds.length} seeds, ${calls} calls compared; ${spanned} read a time ` +
        `spanning a millisecond, ${atExpiry} met a key at its expiry instant\n`,
    );
  }
  expect(failures).toEqual([]);
}
