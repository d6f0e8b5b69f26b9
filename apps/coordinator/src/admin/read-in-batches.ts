/** Store reads sent at once by the admin lists. */
export const READ_BATCH = 100;

/**
 * `read` of every item, READ_BATCH at a time, in order: each batch is one round of pipelined store
 * calls that Redis answers well within one store timeout, however many items there are.
 */
export async function readInBatches<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += READ_BATCH) {
    results.push(...(await Promise.all(items.slice(start, start + READ_BATCH).map(read))));
  }
  return results;
}
