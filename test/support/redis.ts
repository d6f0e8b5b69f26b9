import { randomBytes } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';

/** The shared test Redis. Never flush it: isolate keys with `uniquePrefix()` and delete them afterwards. */
export const SHARED_REDIS_URL = process.env.SLUICE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A key prefix no other test uses, to put in place of `sluice`:
 * `uniquePrefix('budget')` → `t:budget:1f3a9c0b`, keys like `t:budget:1f3a9c0b:{ns/dep}:budget`.
 */
export function uniquePrefix(label: string): string {
  return `t:${label}:${randomBytes(4).toString('hex')}`;
}

const SCAN_COUNT = 500;

/**
 * Deletes every key starting with `prefix` (SCAN MATCH, then UNLINK in batches) and returns how
 * many were deleted. On a Cluster every master is scanned.
 */
export async function deleteKeysWithPrefix(client: Redis | Cluster, prefix: string): Promise<number> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const counts = await Promise.all(nodes.map((node) => deleteOnNode(node, `${escapeGlob(prefix)}*`)));
  return counts.reduce((sum, n) => sum + n, 0);
}

async function deleteOnNode(node: Redis, pattern: string): Promise<number> {
  // Cluster node connections are lazy; without an offline queue they must be connected first.
  if (node.status === 'wait') await node.connect();
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    cursor = next;
    if (keys.length > 0) {
      // One UNLINK per key: on a cluster node, keys of one batch usually sit in different slots.
      const pipeline = node.pipeline();
      for (const key of keys) pipeline.unlink(key);
      for (const [err, n] of (await pipeline.exec()) ?? []) {
        if (err) throw err;
        deleted += Number(n);
      }
    }
  } while (cursor !== '0');
  return deleted;
}

/** Escapes Redis glob metacharacters, so the prefix matches literally. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
