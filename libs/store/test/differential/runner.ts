import { isDeepStrictEqual } from 'node:util';
import { HISTORY_TTL_SECONDS, ManualClock } from '@sluice/core';
import { Cluster } from 'ioredis';
import { MemoryStore, type RedisStore, type SluiceKeys } from '../../src';
import { loadScript, scriptFiles } from '../../src/redis/scripts';
import { sleep } from '../../../../test/support/time';
import type { StoreUnderTest } from '../store-conformance';
import { LONGEST, type Op } from './operations';
import { Side } from './sides';

/** Where a run's two stores first disagreed. */
export interface Divergence {
  /** Index of the operation in the run: the run's first `step + 1` operations fail. */
  step: number;
  op: Op;
  what: string;
  redis: unknown;
  memory: unknown;
}

/**
 * Lets one run's step go at a time (the Redis call and the MemoryStore's answers to it), so runs
 * whose waits overlap do not hold up each other's replies.
 */
export class StepGate {
  private tail: Promise<unknown> = Promise.resolve();
  /** Calls made, and those whose bracket spanned more than one millisecond (replayed to decide). */
  readonly counts = { calls: 0, spanned: 0, atExpiry: 0 };

  exclusive<T>(step: () => Promise<T>): Promise<T> {
    const next = this.tail.then(step);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

const SERVER_TIME = "return redis.call('TIME')";

/**
 * Reads TIME (epoch ms) on the server and connection that `key`'s commands travel on: sent just
 * before and just after an operation's script, on the same connection, it brackets the instant
 * the script read (Redis runs one connection's commands in order).
 */
async function serverMs(client: RedisStore['client'], key: string): Promise<number> {
  const [seconds, micros] = (await client.eval(SERVER_TIME, 1, key)) as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** A key in the slot an operation's script runs on (its first key's hash tag). */
function slotKey(op: Op, keys: SluiceKeys): string {
  if (op.op === 'noteDeadLetterQueue') return keys.namespace(op.ref.namespace).deadLetterQueues;
  if ('ref' in op) {
    const { ref } = op;
    if ('dependency' in ref) return keys.dependency(ref.namespace, ref.dependency).breaker;
    if ('queue' in ref) return keys.queue(ref.namespace, ref.queue).deadLetters;
    if ('limit' in ref) return keys.rateLimit(ref.namespace, ref.limit, ref.key);
    if ('key' in ref && op.op !== 'writePolicy') return keys.idempotency(ref.namespace, ref.key).record;
  }
  if (op.op === 'keepForcedListed') return keys.namespace(op.ref.namespace).forced;
  if (op.op === 'listDeadLetterQueues') return keys.namespace(op.namespace).deadLetterQueues;
  if ('namespace' in op && op.namespace !== undefined && op.op !== 'appendAudit')
    return keys.namespace(op.namespace).dependencies;
  if (op.op === 'registerNamespace' || op.op === 'listNamespaces') return keys.namespaces();
  return keys.audit();
}

/** Loads every script on every master, so no call meets NOSCRIPT (its reload would run after the bracket). */
async function loadScripts(client: RedisStore['client']): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const sources = scriptFiles().map(({ name }) => loadScript(name));
  await Promise.all(nodes.flatMap((node) => sources.map((source) => node.script('LOAD', source))));
}

/** A MemoryStore the run drives, its clock, and the time it was given for each operation (NaN: a pass). */
interface World {
  clock: ManualClock;
  side: Side;
  times: number[];
}

const CLUSTER_SLACK_MS = 2;

/** Most candidate worlds a run keeps (calls that span a millisecond are a few in a hundred). */
const MAX_WORLDS = 8;

/** Whether an operation reads a key whose life is its TTL alone: an idempotency record, an attempt count. */
const readsExpiringKey = (name: Op['op']) => /IdempotencyKey$|^recordDeliveryAttempt$|^ackDelivery$/.test(name);

const MUTATING_FREE = new Set<Op['op']>(['pass', 'readStoreEpochs']);

/** A fresh MemoryStore whose clock is set by the run, through the first `count` operations at their times. */
async function memoryAfter(ops: readonly Op[], times: readonly number[], count: number) {
  const clock = new ManualClock(0);
  const side = new Side(new MemoryStore({ clock }));
  await side.subscribe();
  for (let i = 0; i < count; i++) {
    if (ops[i].op === 'pass') continue;
    clock.set(times[i]);
    await side.run(ops[i]);
  }
  return { clock, side };
}

/** Replies as compared: JSON, with `undefined` fields dropped as the wire drops them. */
const canonical = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/**
 * Runs `ops` on a RedisStore and on a MemoryStore, comparing every reply. Redis's clock is real
 * (a `pass` waits, as in the Redis conformance suites); the MemoryStore's ManualClock is set, for
 * each operation, to the millisecond the script read. When a call spanned a millisecond boundary
 * that millisecond is not known: each candidate is tried on a MemoryStore replayed to that point,
 * and the first whose reply matches is kept (a reply that matches none is a divergence).
 * After every operation that may write, every key of the run is checked for a TTL (redisTtls).
 * At the end, the events each side published are compared, channel by channel.
 */
export async function runBoth(
  ops: readonly Op[],
  openRedis: () => Promise<StoreUnderTest>,
  gate: StepGate,
): Promise<Divergence | null> {
  const subject = await openRedis();
  const client = (subject.store as RedisStore).client;
  const keys = subject.redis?.keys;
  if (!keys) throw new Error('a Redis store under test names its keys');
  await loadScripts(client);
  const redis = new Side(subject.store);
  await redis.subscribe();
  /**
   * The MemoryStores that answered alike so far, each with the times it was given. A call whose
   * bracket spans a millisecond may have read either: each candidate whose reply matches is kept
   * as a world of its own, until a later reply tells them apart (at most MAX_WORLDS are kept).
   */
  let worlds: World[] = [{ times: [], ...(await memoryAfter(ops, [], 0)) }];
  const diverged = (step: number, what: string, redisValue: unknown, memoryValue: unknown): Divergence => ({
    step,
    op: ops[step],
    what,
    redis: redisValue,
    memory: memoryValue,
  });
  try {
    for (let step = 0; step < ops.length; step++) {
      const op = ops[step];
      if (op.op === 'pass') {
        await subject.pass(op.ms);
        for (const world of worlds) world.times.push(Number.NaN);
        continue;
      }
      const answered = await gate.exclusive(async () => {
        const key = slotKey(op, keys);
        // The three go out in one write (a Cluster's auto-pipeline does it per node), so no other
        // client's commands come between them.
        const stream = client instanceof Cluster ? undefined : client.stream;
        // Sent as the host's clock (Redis's too) turns to a new millisecond, they mostly run within it.
        for (const start = Date.now(); Date.now() === start;);
        stream?.cork();
        const before = serverMs(client, key);
        const call = redis.run(op);
        const after = serverMs(client, key);
        stream?.uncork();
        const [from, value, to] = await Promise.all([before, call, after]);
        gate.counts.calls += 1;
        if (from !== to) gate.counts.spanned += 1;
        const expected = canonical(value);
        const next: World[] = [];
        let found: unknown;
        const tryAt = async (first: number, last: number) => {
          for (const world of worlds) {
            for (let at = first; at <= last && next.length < MAX_WORLDS; at++) {
              // One candidate: the world's MemoryStore answers; more: each is tried on a replayed one.
              const trial = from === to && first === from ? world : await memoryAfter(ops, world.times, step);
              trial.clock.set(at);
              found = canonical(await trial.side.run(op));
              if (isDeepStrictEqual(found, expected)) next.push({ ...trial, times: [...world.times, at] });
              else if (trial !== world) await trial.side.unsubscribe();
            }
          }
        };
        await tryAt(from, to);
        // On a Cluster the bracket is sent in the node's auto-pipeline, which now and then lets the
        // script run just after it: when no time in the bracket answers alike, a ms or two later may.
        if (next.length === 0 && client instanceof Cluster) await tryAt(to + 1, to + CLUSTER_SLACK_MS);
        if (next.length === 0 && readsExpiringKey(op.op)) {
          // Redis keeps a key through the millisecond its TTL ends (it expires once now > the end);
          // MemoryStore's expiring maps end it at that millisecond (the conformance suite holds
          // them to it). So a call at that very instant may get Redis's answer of one ms before.
          for (const world of worlds) {
            const trial = await memoryAfter(ops, world.times, step);
            trial.clock.set(from - 1);
            if (isDeepStrictEqual(canonical(await trial.side.run(op)), expected)) {
              next.push({ ...trial, times: [...world.times, from - 1] });
              gate.counts.atExpiry += 1;
            } else await trial.side.unsubscribe();
          }
        }
        const dropped = worlds.filter((world) => !next.some((kept) => kept.side === world.side));
        await Promise.all(dropped.map((world) => world.side.unsubscribe()));
        if (next.length === 0) return { expected, found, from, to };
        worlds = next;
        return null;
      });
      if (answered) {
        const { expected, found, from, to } = answered;
        return diverged(step, `reply (Redis read the time between ${from} and ${to})`, expected, found);
      }
      if (!MUTATING_FREE.has(op.op)) {
        const problems = await redisTtls(client, keys, op, worlds[0].side);
        if (problems.length > 0) return diverged(step, 'key TTLs', problems, 'a TTL within its bound');
      }
    }
    const end = ops.length - 1;
    const memory = worlds[0].side;
    for (const [name, side] of [
      ['redis', redis],
      ['memory', memory],
    ] as const) {
      if (side.epochs.size > 1) return diverged(end, `${name} store epochs changed`, [...side.epochs], 'one epoch');
    }
    let events = await publishedAlike(redis, memory);
    for (const world of worlds.slice(1)) events = events && (await publishedAlike(redis, world.side));
    if (events) return diverged(end, `events on ${events.channel}`, events.redis, events.memory);
    return null;
  } finally {
    await redis.unsubscribe();
    await Promise.all(worlds.map((world) => world.side.unsubscribe()));
    await subject.cleanup();
  }
}

/** The first channel whose events differ, once Redis's have arrived (pub/sub is asynchronous). */
async function publishedAlike(redis: Side, memory: Side) {
  const channels = [...new Set([...redis.events.keys(), ...memory.events.keys()])];
  const count = (side: Side) => channels.reduce((sum, channel) => sum + (side.events.get(channel)?.length ?? 0), 0);
  for (let waited = 0; count(redis) < count(memory) && waited < 2000; waited += 20) await sleep(20);
  for (const channel of channels) {
    const [fromRedis, fromMemory] = [redis.events.get(channel) ?? [], memory.events.get(channel) ?? []];
    if (!isDeepStrictEqual(fromRedis, fromMemory)) return { channel, redis: fromRedis, memory: fromMemory };
  }
  return null;
}

const SECOND = 1000;
const DAY = 86_400 * SECOND;
/**
 * The most PTTL each kind of key may have in a run (by what follows its hash tag), from the longest
 * durations operations/LONGEST generates; null: lives without a TTL, as the keys without one do.
 */
const TTL_BOUNDS: Array<[RegExp, number | null]> = [
  [/^:(budget|active-reporters|outcomes|reporters|latency)$/, (LONGEST.windowSeconds + 2) * SECOND],
  [/^:history$/, HISTORY_TTL_SECONDS * SECOND],
  [/^:breaker$/, DAY + LONGEST.openMs],
  [/^:(callers|deps)$/, LONGEST.heldRegistrationMs],
  [/^:namespaces$/, LONGEST.retentionMs],
  [/^:(probes|leases)$/, LONGEST.leaseMs + SECOND],
  [/^:rate$/, 10 * LONGEST.rateLimitPeriodMs],
  [/^:forced$/, LONGEST.openMs],
  [/^:dlq-queues$/, LONGEST.retentionMs],
  [/^:(retry|admit|take):.+$/, 2 * 60 * SECOND],
  [/^:record$/, LONGEST.retentionMs],
  [/^:(attempts:.+|dlq|dlq-index)$/, LONGEST.retentionMs],
  [/^:(audit|policies|epoch)$/, null],
];

/**
 * Every key of the run has a TTL within its bound, but for the keys that live without one; a
 * breaker and a forced set may too while the MemoryStore holds that dependency forced until reset.
 */
async function redisTtls(client: RedisStore['client'], keys: SluiceKeys, op: Op, memory: Side): Promise<string[]> {
  const { prefix } = keys;
  const written = keysOf(op, keys);
  const ttls = await Promise.all(written.map((key) => client.pttl(key)));
  const problems: string[] = [];
  written.forEach((key, i) => {
    const tag = /^:\{([^}]*)\}/.exec(key.slice(prefix.length));
    const suffix = key.slice(prefix.length).replace(/^:\{[^}]*\}/, '');
    const bound = TTL_BOUNDS.find(([pattern]) => pattern.test(suffix));
    const pttl = ttls[i];
    if (!bound) problems.push(`${key}: a key the run does not know`);
    else if (pttl === -1 && bound[1] !== null && !untilReset(memory, suffix, tag?.[1] ?? '')) {
      problems.push(`${key}: no TTL`);
    } else if (bound[1] !== null && pttl > bound[1]) problems.push(`${key}: PTTL ${pttl} over ${bound[1]}`);
  });
  return problems;
}

/** Every key an operation may write (its events channel aside). */
function keysOf(op: Op, keys: SluiceKeys): string[] {
  if ('ref' in op && 'dependency' in op.ref) {
    const { namespace, dependency } = op.ref;
    const namespaceKeys = keys.namespace(namespace);
    if (op.op === 'keepForcedListed') return [namespaceKeys.forced];
    if (op.op === 'registerDependency') return [namespaceKeys.dependencies, namespaceKeys.callers];
    const { events: _, ...stored } = keys.dependency(namespace, dependency);
    const requests = keys.dependencyRequests(namespace, dependency);
    const ids =
      op.op === 'decideRetry' ? [op.requestId] : op.op === 'decideRetries' ? op.asks.map((ask) => ask.requestId) : [];
    const requestKeys = ids.flatMap((id) => (id === undefined ? [] : [requests.retry(id)]));
    if (op.op === 'admit' && op.requestId !== undefined) requestKeys.push(requests.admit(op.requestId));
    return [...Object.values(stored), ...requestKeys];
  }
  if (op.op === 'noteDeadLetterQueue') return [keys.namespace(op.ref.namespace).deadLetterQueues];
  if ('ref' in op && 'queue' in op.ref) {
    const { namespace, queue } = op.ref;
    const queueKeys = keys.queue(namespace, queue);
    const attempts = 'messageId' in op ? [keys.deliveryAttempts(namespace, queue, op.messageId)] : [];
    return [queueKeys.deadLetters, queueKeys.deadLetterIndex, ...attempts];
  }
  if ('ref' in op && 'limit' in op.ref) {
    const { namespace, limit, key } = op.ref;
    const take = op.op === 'takeRateLimit' && op.requestId !== undefined;
    return [
      keys.rateLimit(namespace, limit, key),
      ...(take ? [keys.rateLimitRequest(namespace, limit, key, op.requestId)] : []),
    ];
  }
  if (op.op === 'claimIdempotencyKey' || op.op === 'completeIdempotencyKey' || op.op === 'releaseIdempotencyKey') {
    return [keys.idempotency(op.ref.namespace, op.ref.key).record];
  }
  if (op.op === 'registerNamespace') return [keys.namespaces()];
  if (op.op === 'writePolicy') return [keys.namespace(op.namespace).policies];
  if (op.op === 'appendAudit') return [keys.audit()];
  return [];
}

/** Whether the MemoryStore holds what the key keeps until an operator's reset. */
function untilReset(memory: Side, suffix: string, tag: string): boolean {
  const forcedForGood = (record: { state: string; openUntil: number | null } | undefined) =>
    record !== undefined &&
    (record.state === 'forced_open' || record.state === 'forced_closed') &&
    record.openUntil === null;
  if (suffix === ':breaker') return forcedForGood(memory.breakers.get(tag));
  if (suffix === ':forced') return (memory.listedUntilReset.get(tag)?.size ?? 0) > 0;
  return false;
}
