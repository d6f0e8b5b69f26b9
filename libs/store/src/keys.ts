/**
 * Every Redis key Sluice uses is built here. All keys of one resource share a hash tag, so each
 * script touches one slot and runs unchanged on Redis Cluster.
 */
export interface DependencyKeys {
  /** Hash: sliding window of first attempts and granted retries. */
  budget: string;
  /** Hash: sliding window of call outcomes (successes, failures, slow calls). */
  outcomes: string;
}

export interface NamespaceKeys {
  /** Sorted set: dependencies seen in the namespace, scored by last use (epoch ms). */
  dependencies: string;
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

export class SluiceKeys {
  constructor(readonly prefix = 'sluice') {}

  dependency(namespace: string, dependency: string): DependencyKeys {
    const tagged = `${this.prefix}:{${namespace}/${dependency}}`;
    return { budget: `${tagged}:budget`, outcomes: `${tagged}:outcomes` };
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
    return { dependencies: `${this.prefix}:{${namespace}}:deps` };
  }

  private queueTag(namespace: string, queue: string): string {
    return `${this.prefix}:{${namespace}/queue/${queue}}`;
  }
}
