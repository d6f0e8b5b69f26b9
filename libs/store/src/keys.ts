/**
 * Every Redis key and channel Sluice uses is built here. All keys of one resource share a hash tag,
 * so each script touches one slot and runs unchanged on Redis Cluster; a resource's event channel
 * carries the same tag, so scripts can publish on it with sharded pub/sub.
 */
export interface DependencyKeys {
  /** Hash: sliding window of first attempts and granted retries. */
  budget: string;
  /** Hash: sliding window of call outcomes (successes, failures, slow calls). */
  outcomes: string;
  /** Hash: the circuit breaker's record. */
  breaker: string;
  /** Sorted set: reporters that reported failures in the breaker window, by last failure. */
  reporters: string;
  /** Sorted set: every reporter that reported in the budget window, by last report (the fleet's size). */
  activeReporters: string;
  /** Sorted set: half-open probe leases, by expiry. */
  probes: string;
  /** String: the dependency's rate limit (GCRA theoretical arrival time). */
  rate: string;
  /** Sorted set: concurrency leases, by expiry. */
  leases: string;
  /** Hash: sliding window of latency counts on the fixed bucket bounds. */
  latency: string;
  /** Hash: the last 15 minutes, one field per 10 s step (a ring of at most 90 fields; history.lua). */
  history: string;
  /** Sharded pub/sub channel: breaker transitions and policy changes of the dependency. */
  events: string;
}

/**
 * Where the first outcome of a call with a caller-chosen id (`requestId`) is kept, under the
 * resource's own hash tag. Without an id the key is built with '' and names a key the script never
 * touches: the script's KEYS count and slot stay the same either way.
 */
export interface RequestOutcomeKeys {
  /** Hash: a granted retry decision of the dependency, for one requestId. */
  retry(requestId: string | undefined): string;
  /** Hash: a granted admission (probe and lease) of the dependency, for one requestId. */
  admit(requestId: string | undefined): string;
}

export interface NamespaceKeys {
  /** Sorted set: dependencies seen in the namespace, scored by last use (epoch ms). */
  dependencies: string;
  /** Sorted set: the dependencies callers used (reports, retries, admissions), scored by last such use. */
  callers: string;
  /** Hash: the namespace's policy documents and their versions (see PolicyDocumentRef). */
  policies: string;
  /** Sharded pub/sub channel: dependencies new to the namespace. */
  events: string;
  /**
   * Sorted set: dependencies an operator's forced state keeps listed however long nobody uses
   * them, scored by when the state lapses (+inf: until reset).
   */
  forced: string;
  /**
   * Sorted set: the queues that parked a dead letter within the dead letters' retention, scored by
   * the latest parking (epoch ms); at most a capped number, the least recent going first.
   */
  deadLetterQueues: string;
}

export interface IdempotencyKeys {
  /** Hash: the key's state, fingerprint, fencing token, lease and stored response. */
  record: string;
}

export interface QueueKeys {
  /** Hash: dead letters by message id (JSON), plus the `#seq` counter that orders them. */
  deadLetters: string;
  /** Sorted set: message ids of dead letters, scored by their `#seq` (oldest first). */
  deadLetterIndex: string;
}

/** The start of the hash tag of the store's epoch markers: `{~epoch/<shard>}`. */
export const STORE_EPOCH_TAG = '~epoch/';

/** Most dependencies whose keys are kept built (see SluiceKeys.dependency); past it they are built anew. */
const BUILT_DEPENDENCIES = 10_000;

interface BuiltDependency {
  keys: DependencyKeys;
  requests: RequestOutcomeKeys;
}

export class SluiceKeys {
  /** Each dependency's keys as built, by namespace then dependency: the decision path asks per request. */
  private readonly built = new Map<string, Map<string, BuiltDependency>>();
  private builtCount = 0;

  constructor(readonly prefix = 'sluice') {}

  /** The dependency's keys (built once and kept, frozen: the same object for every caller). */
  dependency(namespace: string, dependency: string): DependencyKeys {
    return this.builtDependency(namespace, dependency).keys;
  }

  private builtDependency(namespace: string, dependency: string): BuiltDependency {
    let byDependency = this.built.get(namespace);
    const kept = byDependency?.get(dependency);
    if (kept) return kept;
    if (this.builtCount >= BUILT_DEPENDENCIES) {
      this.built.clear();
      this.builtCount = 0;
      byDependency = undefined;
    }
    if (!byDependency) this.built.set(namespace, (byDependency = new Map()));
    const tagged = `${this.prefix}:{${namespace}/${dependency}}`;
    const retry = `${tagged}:retry:`;
    const admit = `${tagged}:admit:`;
    const built: BuiltDependency = {
      keys: Object.freeze(this.buildDependency(tagged)),
      requests: Object.freeze({
        retry: (requestId: string | undefined) => (requestId ? retry + requestId : retry),
        admit: (requestId: string | undefined) => (requestId ? admit + requestId : admit),
      }),
    };
    byDependency.set(dependency, built);
    this.builtCount++;
    return built;
  }

  private buildDependency(tagged: string): DependencyKeys {
    return {
      budget: `${tagged}:budget`,
      outcomes: `${tagged}:outcomes`,
      breaker: `${tagged}:breaker`,
      reporters: `${tagged}:reporters`,
      activeReporters: `${tagged}:active-reporters`,
      probes: `${tagged}:probes`,
      rate: `${tagged}:rate`,
      leases: `${tagged}:leases`,
      latency: `${tagged}:latency`,
      history: `${tagged}:history`,
      events: `${tagged}:events`,
    };
  }

  /** The first outcomes of a dependency's calls with a caller-chosen id; same tag as the dependency. */
  dependencyRequests(namespace: string, dependency: string): RequestOutcomeKeys {
    return this.builtDependency(namespace, dependency).requests;
  }

  /** `{<ns>/idem/<key>}`: a dependency or queue name has no `/`, so tags cannot collide. */
  idempotency(namespace: string, key: string): IdempotencyKeys {
    return { record: `${this.prefix}:{${namespace}/idem/${key}}:record` };
  }

  queue(namespace: string, queue: string): QueueKeys {
    const tagged = this.queueTag(namespace, queue);
    return { deadLetters: `${tagged}:dlq`, deadLetterIndex: `${tagged}:dlq-index` };
  }

  /** Hash: one message's failed attempts (`n`), first attempt (`first`) and `parked` flag; same tag as its queue. */
  deliveryAttempts(namespace: string, queue: string, messageId: string): string {
    return `${this.queueTag(namespace, queue)}:attempts:${messageId}`;
  }

  namespace(namespace: string): NamespaceKeys {
    const tagged = `${this.prefix}:{${namespace}}`;
    return {
      forced: `${tagged}:forced`,
      dependencies: `${tagged}:deps`,
      callers: `${tagged}:callers`,
      policies: `${tagged}:policies`,
      events: `${tagged}:events`,
      deadLetterQueues: `${tagged}:dlq-queues`,
    };
  }

  /** String: one key of a named rate limit (GCRA theoretical arrival time); its own slot. */
  rateLimit(namespace: string, limit: string, key: string): string {
    return `${this.prefix}:{${namespace}/limit/${limit}/${key}}:rate`;
  }

  /**
   * Hash: the first (granted) answer of a take with a caller-chosen id, for one key of a named rate
   * limit; same tag as the limit key. Without an id ('') the script never touches it.
   */
  rateLimitRequest(namespace: string, limit: string, key: string, requestId: string | undefined): string {
    return `${this.prefix}:{${namespace}/limit/${limit}/${key}}:take:${requestId ?? ''}`;
  }

  /** Sorted set: the namespaces that hold state, scored by last use (epoch ms); its own slot. */
  namespaces(): string {
    return `${this.prefix}:namespaces`;
  }

  /**
   * String: the epoch marker of one shard of the store (redis/store-epoch.ts). `shard` picks the
   * hash tag, so on a Cluster one marker lives on each master; `~` is in no name, so the tag is no
   * resource's.
   */
  storeEpoch(shard: string): string {
    return `${this.prefix}:{${STORE_EPOCH_TAG}${shard}}:epoch`;
  }

  /** Stream: the audit log of operators' actions, every namespace. */
  audit(): string {
    return `${this.prefix}:audit`;
  }

  private queueTag(namespace: string, queue: string): string {
    return `${this.prefix}:{${namespace}/queue/${queue}}`;
  }
}
