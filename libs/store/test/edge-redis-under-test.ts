import { createRedisClient, type RedisConnectionOptions } from '../src';
import type { EdgeStoreUnderTest } from './edge-conformance';
import { redisStoreUnderTest } from './redis-under-test';

/** Hash fields that hold an instant (epoch ms): the breaker's and an idempotency record's. */
const INSTANT_FIELDS = new Set(['since', 'openUntil', 'le', 'ca', 'ex', 'co']);
/** A window bucket's field: '<epoch second>:<counter>'. */
const BUCKET_FIELD = /^(\d+):(.+)$/;
/** A GCRA TAT: '<epoch ms>+<units>/<rate>'. */
const TAT = /^(\d+)(\+.*)$/;

/**
 * A RedisStore under test whose clock steps back: Redis's TIME cannot be moved, so the instants
 * stored in the named keys move forward instead, which is what the scripts see after a step back.
 */
export async function edgeRedisStoreUnderTest(
  connection: Omit<RedisConnectionOptions, 'commandTimeoutMs'>,
  label: string,
): Promise<EdgeStoreUnderTest> {
  const subject = await redisStoreUnderTest(connection, label);
  const client = createRedisClient({ ...connection, commandTimeoutMs: 2000 });
  await new Promise((resolve) => client.once('ready', resolve));
  const shift = async (key: string, ms: number): Promise<void> => {
    const type = await client.type(key);
    if (type === 'string') {
      const value = (await client.get(key)) ?? '';
      const tat = TAT.exec(value);
      const moved = tat ? `${Number(tat[1]) + ms}${tat[2]}` : String(Number(value) + ms);
      await client.set(key, moved, 'KEEPTTL');
    } else if (type === 'zset') {
      const entries: string[] = await client.zrange(key, '0', '-1', 'WITHSCORES');
      for (let i = 0; i < entries.length; i += 2) await client.zadd(key, Number(entries[i + 1]) + ms, entries[i]);
    } else if (type === 'hash') {
      const seconds = Math.round(ms / 1000);
      for (const [field, value] of Object.entries(await client.hgetall(key))) {
        const bucket = BUCKET_FIELD.exec(field);
        if (INSTANT_FIELDS.has(field)) await client.hset(key, field, Number(value) + ms);
        else if (field === 'oldest' || field === 'newest') await client.hset(key, field, Number(value) + seconds);
        else if (bucket) {
          await client.hdel(key, field);
          await client.hset(key, `${Number(bucket[1]) + seconds}:${bucket[2]}`, value);
        }
      }
    }
  };
  return {
    ...subject,
    stepBack: async (ms, keys) => {
      if (!subject.redis) throw new Error('a Redis store under test names its keys');
      for (const key of keys(subject.redis.keys)) await shift(key, ms);
    },
    cleanup: async () => {
      await subject.cleanup();
      client.disconnect();
    },
  };
}
